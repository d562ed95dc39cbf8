#!/usr/bin/env python3
"""profiles/review.py: the mechanical part of the hand review of the shipped profiles.

    python3 profiles/review.py OUT/*.yaml     # OUT from profiles/learn.sh

It rewrites, in place and as text (so the files keep sysprof's format), what a learn on this
machine makes too specific to ship, and adds a `note:` to the rules that need one. Everything
it does is listed below and justified in profiles/README.md; what it cannot decide (is this
allowance needed at all?) is the reviewer's job, before committing.
"""
import re, sys
def rule(path, by, seen, note):
    return f'    - {{path: {path}, by: {by}, seen: {seen}, note: "{note}"}}\n'
CG = "Go/Rust/node runtimes read their cgroup's CPU and memory limits (GOMAXPROCS, thread pools, heap size); which files depends on cgroup v1 or v2 and the host's cgroup path"
ZI = "the local time zone (which file is the host's /etc/localtime)"
REPL = [
  # (regex on path, replacement path, note)
  (r'^/sys/fs/cgroup/.*', '/sys/fs/cgroup', CG),
  (r'^/usr/share/zoneinfo/.*', '/usr/share/zoneinfo', ZI),
  (r'^/usr/lib/x86_64-linux-gnu/lib.*\.so[.0-9]*$', '/usr/lib/x86_64-linux-gnu', "shared libraries (exact versions differ between hosts)"),
  (r'^\$RUSTUP_HOME/toolchains/stable-x86_64-unknown-linux-gnu/lib/lib(LLVM|rustc_driver).*', '$RUSTUP_HOME/toolchains/stable-x86_64-unknown-linux-gnu/lib', "the toolchain's own libraries (libLLVM, librustc_driver; versioned names)"),
  (r'^/usr/local/lib/python3\.11/dist-packages/.*', '/usr/local/lib/python3.11/dist-packages', "site-packages: python reads every .pth file here at startup (what is installed differs between hosts)"),
  (r'^\$WORKDIR/target[A-Za-z0-9]{6}$', '$WORKDIR/target*', "cargo creates target/ through a temporary sibling (targetXXXXXX) renamed into place"),
]
# Exec rules rewritten (exec rules are otherwise never rewritten).
EXEC_REPL = [
  # rustup's proxies are symlinks in $CARGO_HOME/bin; learn records the resolved rustup, but the
  # PATH lookup of `cargo`/`rustfmt` needs the links themselves to be visible.
  (r'^\$CARGO_HOME/bin/rustup$', '$CARGO_HOME/bin', "rustup's proxies: cargo, rustc, rustfmt in $CARGO_HOME/bin are links to rustup"),
  # go test runs the test binary it linked in its work directory: NAME.test, named after the
  # package, so the learned name is the fixture's.
  (r'^\$TMPDIR/go-build\*/b\d+/[^/]+\.test$', '$TMPDIR/go-build*', "the test binary go links in its work directory (PKG.test, any package)"),
  # cargo test runs the test binaries it built: target/debug/deps/CRATE-HASH.
  (r'^\$WORKDIR/target/debug/deps/[^/]+$', '$WORKDIR/target', "the test binaries cargo builds (target/debug/deps/CRATE-HASH) and runs"),
]
NOTES = {
  '$GOCONFIG': "Go's per-user config: telemetry counters (telemetry/local) and `go env -w` settings; no credentials",
  '$GOCACHE': "Go build cache",
  '$TMPDIR/go-build*': "the go command's work directory for one build",
  '$WORKDIR/target': "cargo's build output",
  '$WORKDIR/target*': "cargo creates target/ through a temporary sibling (targetXXXXXX) renamed into place",
  '$CARGO_HOME/.package-cache': "cargo's lock files in CARGO_HOME (taken even --offline)",
  '$HOME/.npm': "npm's cache and debug logs (_logs)",
  '$WORKDIR/.git': "the repository: objects, index, refs, logs",
  '$WORKDIR/__pycache__': "byte-compiled modules (py_compile, imports)",
  '$HOME/.gitconfig': "the user's git identity and settings (cargo reads it for git dependencies)",
  '/etc/ssl/certs/ca-certificates.crt': "CA bundle loaded at startup (no network is allowed)",
  '/usr/bin/dash': "/bin/sh on Debian (npm scripts and the git session run through sh)",
  '$CARGO_HOME/bin/rustup': "rustup's proxy ($CARGO_HOME/bin/cargo is a link to it)",
}
# The Go runtime's occasional calls: it preempts a long-running goroutine by signalling its own
# thread (getpid + tgkill, SIGURG), waits in the netpoller (epoll_pwait) when every goroutine
# blocks, and unmaps memory (munmap). A short run may never need them, so a learn can miss them
# (gofmt did; drift and enforce found them). Added to every Go profile that lacks them.
GO_RUNTIME = ['epoll_pwait', 'getpid', 'munmap', 'tgkill']

def add_go_runtime(lines):
    if not any('by: $GOROOT/bin/' in l for l in lines):
        return lines
    out, in_allow, have = [], False, set()
    for l in lines:
        if l.startswith('  allow:'):
            in_allow = True
        elif in_allow and not l.startswith('    - {name:'):
            by = next((re.search(r'by: (\$GOROOT/bin/[a-z]+)', x).group(1) for x in lines if re.search(r'by: \$GOROOT/bin/[a-z]+', x)), '$GOROOT/bin/go')
            for n in GO_RUNTIME:
                if n not in have:
                    out.append(f'    - {{name: {n}, by: {by}, seen: 1}}\n')
            in_allow = False
        if in_allow:
            m = re.match(r'^    - \{name: ([a-z0-9_]+)', l)
            if m:
                have.add(m.group(1))
        out.append(l)
    # keep the allow list sorted by name
    start = next(i for i, l in enumerate(out) if l.startswith('  allow:')) + 1
    end = start
    while end < len(out) and out[end].startswith('    - {name:'):
        end += 1
    out[start:end] = sorted(out[start:end], key=lambda x: re.search(r'name: ([a-z0-9_]+)', x).group(1))
    return out

line_re = re.compile(r'^    - \{path: (?P<path>[^,}]+)(?P<rest>.*)\}$')
for f in sys.argv[1:]:
    out, section, seen_paths = [], None, set()
    for l in open(f):
        m = re.match(r'^  (read|write|exec|list|hidden):$', l)
        if m:
            section, seen_paths = m.group(1), set()
        elif not l.startswith('    ') :
            section = None if not l.startswith('  ') else section
        m = line_re.match(l.rstrip('\n'))
        if m and section in ('read', 'write', 'exec', 'list'):
            p, rest = m.group('path'), m.group('rest')
            by = re.search(r'by: ([^,}]+)', rest); by = by.group(1) if by else ''
            seen = re.search(r'seen: (\d+)', rest); seen = seen.group(1) if seen else '1'
            for rx, np, note in (EXEC_REPL if section == 'exec' else REPL):
                if re.match(rx, p):
                    if np in seen_paths:
                        l = None
                    else:
                        seen_paths.add(np); l = rule(np, by, seen, note)
                    break
            else:
                if p in seen_paths:
                    l = None
                else:
                    seen_paths.add(p)
                    if p in NOTES and 'note:' not in rest:
                        l = rule(p, by, seen, NOTES[p])
        if l is not None:
            out.append(l)
    out = add_go_runtime(out)
    open(f, 'w').write(''.join(out))

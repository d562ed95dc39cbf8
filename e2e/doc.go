// Package e2e holds end-to-end tests of the sysprof binary: TestMain builds ./cmd/sysprof once
// and every test runs it as a subprocess, the way a user or a CI job would, with an explicit,
// hermetic and offline environment (its own HOME, TMPDIR, Go and Cargo caches, GOPROXY=off,
// cargo --offline): a testutil.Box, the CLI harness e2e shares with shipped/.
//
// What is covered:
//
//   - No false denials on real tools (issue 4): go build, go test, cargo build, make with gcc and
//     git are learned once, then enforced five times with zero denials and the same output as an
//     unsandboxed run, then enforced again from a different work directory and HOME.
//   - Perturbations (issue 15): everyday commands and the testdata projects' builds (make, go
//     build, cargo build), learned once with output to a file, are enforced and drifted at a
//     terminal, into a pipe, a file or /dev/null, with stdin closed or a file, in a UTF-8 locale,
//     on one CPU, from another checkout, HOME or TMPDIR, with cold caches and as an ordinary user:
//     zero denials, the unsandboxed output, no widening. Incremental rebuilds after a source edit
//     are enforced under profiles learned from clean. Debian workflows (issue 24: mypy,
//     meson+ninja, cmake, pre-commit with a local hook; perturb_debian_test.go) run unchanged,
//     after an edit, in a fresh clone, CI-like (env -i, fresh HOME, setsid, output to a file)
//     and as another user.
//   - Terminals (issue 24 item 4, terminal_test.go): a profile learned without a terminal runs
//     at one and the reverse: /dev/tty, node reopening its /dev/pts/N, git paging through less
//     (its history) or, learned to a file, not paging at all; zero denials.
//   - Drift (issue 5): drift on an unchanged project reports nothing; a build step that reads
//     ~/.ssh or connects to a new loopback port is reported as exactly that change, critical.
//   - The CLI contract of DESIGN.md: exit statuses (125, 126, 127, the command's own, 128+N),
//     stdout left to the command, an interrupted learn saved as incomplete, diff and doctor.
//
// The tests need root (learning uses eBPF): they skip with a reason otherwise and fail under
// CI=true. Run them with
//
//	sudo CI=true go test -count=1 ./e2e/
package e2e

//go:build 386 || amd64 || arm64

package bpf

import (
	"crypto/sha256"
	"sync"
)

// guard.c is the kernel side of `sysprof enforce` as root (file denial observation); see the
// comment at its top.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64,arm64 -cc clang -cflags "-O2 -g -Wall -Werror" -type guard_event -type file_op -type hidden_path -type guard_kind -type run_cfg Guard guard.c -- -I.

// GuardDigest is the SHA-256 of the guard object embedded in this binary (what the enforcer's
// cache of loaded guard programs is keyed by: other bytes never use its pins).
var GuardDigest = sync.OnceValue(func() [32]byte { return sha256.Sum256(_GuardBytes) })

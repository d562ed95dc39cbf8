//go:build 386 || amd64 || arm64

package bpf

import (
	"crypto/sha256"
	"sync"
)

// LearnDigest is the SHA-256 of the learn object embedded in this binary (what the profiler's
// warm take-over is keyed by: another build never takes this one's objects).
var LearnDigest = sync.OnceValue(func() [32]byte { return sha256.Sum256(_LearnBytes) })

// Package bpf holds the eBPF programs of sysprof and their bpf2go-generated Go bindings.
//
// learn.c is the kernel side of `sysprof learn` (see the comment at its top). The generated
// learn_{x86,arm64}_bpfel.go and .o (bpf2go -target amd64,arm64: arch.h reads each one's
// syscall registers and ABI) are committed so that `go build` never needs clang; `make generate`
// (or `go generate ./bpf`) rebuilds them with clang and the vmlinux.h dumped from this kernel's
// BTF (`bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h`).
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64,arm64 -cc clang -cflags "-O2 -g -Wall -Werror" -type exec_event -type fork_event -type exit_event -type file_event -type unix_event -type net_event -type dns_event -type sniff_event -type sc_key -type arg_key -type task_info -type stash -type run_state -type cpu_cache -type sc_op -type ev_kind -type arg_kind -type access_kind -type arch_kind -type counter Learn learn.c -- -I.

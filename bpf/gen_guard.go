package bpf

// guard.c is the kernel side of `sysprof enforce` as root (network allowlist hooks and file
// denial observation); see the comment at its top.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror" -type guard_event -type file_op -type hidden_path -type net_key4 -type net_key6 -type guard_kind -type net_op -type net_proto -type guard_counter Guard guard.c -- -I.

//go:build 386 || amd64 || arm64

package bpf

// execorder.c records the order of execs behind each connect of a root run with a transport
// helper rule; see the comment at its top.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64,arm64 -cc clang -cflags "-O2 -g -Wall -Werror" -type exec_order Execorder execorder.c -- -I.

//go:build ignore

// execorder.c: the order of execs behind each connect of a root run whose network rules name
// a tool with transport helpers (`by: git`: git-remote-https, ssh; netproxy helpers.go).
//
// Attached to the run's cgroup as cgroup/connect4 and cgroup/connect6, it records, by the
// socket's cookie (what sock_diag gives the egress proxy for the client socket it accepted),
// the connecting process and its parents (host tgids) with their exec ids, from which user
// space tells for each whether its parent's current file ran it: it was forked while the
// parent ran that file (its parent_exec_id is the parent's self_exec_id: the parent has not
// exec'd since) and it exec'd at most once since (its self_exec_id, copied from the parent at
// fork, grew by at most one). A helper forked before its parent exec'd the tool fails that,
// whatever /proc shows afterwards. It never refuses a connect (returns 1).

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ORDER_LEVELS 8

struct exec_order {
	__u32 n;                       // levels filled
	__u32 tgid[ORDER_LEVELS];      // the connecting process, then its parents
	__u64 self_exec[ORDER_LEVELS]; // each one's self_exec_id
	__u64 parent_exec[ORDER_LEVELS]; // each one's parent_exec_id (its parent's self_exec_id at its fork)
};

const struct exec_order *unused_exec_order __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); // connects between a connect and the proxy's accept
	__type(key, __u64);
	__type(value, struct exec_order);
} orders SEC(".maps");

// record copies the exec ids as they are and leaves the compares to user space: a compare
// here makes the verifier walk every combination of its outcomes (2^16 paths, ~0.1-0.4 s of
// loading measured); copying has one path a level.
static __always_inline int record(void *ctx)
{
	struct exec_order o = {};
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	for (int i = 0; i < ORDER_LEVELS; i++) {
		o.tgid[i] = BPF_CORE_READ(t, tgid);
		o.self_exec[i] = BPF_CORE_READ(t, self_exec_id);
		o.parent_exec[i] = BPF_CORE_READ(t, parent_exec_id);
		o.n = i + 1;
		struct task_struct *p = BPF_CORE_READ(t, real_parent);
		if (!p || p == t)
			break;
		t = p;
	}
	__u64 cookie = bpf_get_socket_cookie(ctx);
	bpf_map_update_elem(&orders, &cookie, &o, BPF_ANY);
	return 1;
}

SEC("cgroup/connect4")
int order4(struct bpf_sock_addr *ctx) { return record(ctx); }

SEC("cgroup/connect6")
int order6(struct bpf_sock_addr *ctx) { return record(ctx); }

// scratch.h: the per-CPU scratch map both programs build variable-length events in, and that
// path.h's dentry walk writes into. Two slots, one per program family, so that a softirq program
// cannot overwrite what a tracepoint program on the same CPU is building. The including file
// defines SCRATCH_SZ first.
#ifndef SYSPROF_SCRATCH_H
#define SYSPROF_SCRATCH_H

struct scratch {
	__u32 busy;
	__u32 off;   // walk: where the next component goes in data
	__u32 limit; // walk: no component starts beyond this
	__u32 trunc; // walk: the path was longer than the room for it
	__u32 hit;   // walk_to: the stop it ended at (1 or 2), 0: the root
	__u32 pad;
	__u8 data[SCRATCH_SZ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

#endif

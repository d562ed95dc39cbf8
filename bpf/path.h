// path.h: the dentry walk that turns a path (mount, dentry) into its absolute name, and the
// current task's file by descriptor; shared by learn.c and guard.c. The including file includes
// scratch.h and defines DATA_MASK, NAME_SZ (a power of two, > NAME_MAX) and PATH_SZ before
// including it.
#ifndef SYSPROF_PATH_H
#define SYSPROF_PATH_H

#include "span.h"

// The walk's bpf_loop context holds plain integers, not typed kernel pointers: a subprogram's
// argument types go into the program's BTF, and typed ones pulled in ~2000 kernel types (struct
// dentry reaches most of the kernel), ~5 ms of loading per program that walks. A step reads
// d_parent and d_name with one helper call.
struct walk_ctx {
	__u64 dentry;   // struct dentry *
	__u64 mnt;      // struct mount *
	__u64 mnt_root; // struct dentry *
	__u32 slot;
	__u32 pad;
	// Directories (dentry, struct mount *) whose names the reader already has: the walk stops
	// there and says which in the scratch's hit (1 or 2). Zero: none.
	__u64 stop_dentry[2];
	__u64 stop_mnt[2];
};

// A directory a walk may stop at (see walk_to).
struct walk_stop {
	__u64 dentry; // struct dentry *
	__u64 mnt;    // struct mount *
};

// The walk keeps its write offset in the scratch map value, not in walk_ctx: a map value is an
// unknown scalar to the verifier, so the bpf_loop callback converges instead of being explored
// once per possible offset (that blew the 1M instruction limit).
static long walk_step(__u32 i, struct walk_ctx *c)
{
	__u32 slot = c->slot;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s)
		return 1;
	__u64 d = c->dentry;
	if (d && d == c->stop_dentry[0] && c->mnt == c->stop_mnt[0]) {
		s->hit = 1;
		return 1;
	}
	if (d && d == c->stop_dentry[1] && c->mnt == c->stop_mnt[1]) {
		s->hit = 2;
		return 1;
	}
	// d_parent and d_name (struct qstr: hash, len, name) are adjacent: one read.
	__u64 db[3];
	if (SPAN_READ(db, d, struct dentry, d_parent))
		return 1;
	__u64 parent = SPAN_GET(db, d, struct dentry, d_parent, d_parent, __u64);
	__u32 len = SPAN_GET(db, d, struct dentry, d_parent, d_name.len, __u32);
	__u64 name = SPAN_GET(db, d, struct dentry, d_parent, d_name.name, __u64);
	if (d == c->mnt_root || d == parent) {
		struct mount *m = (struct mount *)c->mnt;
		struct mount *mp = BPF_CORE_READ(m, mnt_parent);
		if (d != c->mnt_root || mp == m || !mp)
			return 1; // the root, or a tree without a mount above it
		c->dentry = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
		c->mnt = (__u64)mp;
		c->mnt_root = (__u64)BPF_CORE_READ(mp, mnt.mnt_root);
		return 0;
	}
	__u32 off = s->off;
	if (off > s->limit) {
		s->trunc = 1;
		return 1;
	}
	// The name by its length (a word-wise copy; the _str helpers copy byte by byte), then a NUL.
	len &= NAME_SZ - 1; // NAME_MAX is 255
	if (len && bpf_probe_read_kernel(&s->data[off & DATA_MASK], len, (void *)name))
		return 1;
	s->data[(off + len) & DATA_MASK] = 0;
	s->off = off + len + 1;
	c->dentry = parent;
	return 0;
}

// mount_of is the struct mount around vm, the form walk_ctx and walk_stop keep.
static __always_inline __u64 mount_of(struct vfsmount *vm)
{
	return (__u64)((void *)vm - bpf_core_field_offset(struct mount, mnt));
}

// walk_to writes the components of the path (vm, dentry) (leaf first, each NUL-terminated) into
// scratch slot data at off, at most max bytes, up to the root or to one of stops (may be 0),
// whichever comes first: s->hit says which stop (1 or 2), 0 for the root. Returns the bytes
// written; *trunc is set when the path was longer.
static __always_inline __u32 walk_to(struct scratch *s, struct vfsmount *vm, struct dentry *dentry, __u32 slot,
				     __u32 off, __u32 max, __u8 *trunc, struct walk_stop *stops)
{
	struct walk_ctx c = {};
	c.dentry = (__u64)dentry;
	c.mnt = mount_of(vm);
	c.mnt_root = (__u64)BPF_CORE_READ(vm, mnt_root);
	c.slot = slot;
	if (stops) {
		c.stop_dentry[0] = stops[0].dentry;
		c.stop_mnt[0] = stops[0].mnt;
		c.stop_dentry[1] = stops[1].dentry;
		c.stop_mnt[1] = stops[1].mnt;
	}
	s->off = off;
	s->limit = off + max - NAME_SZ;
	s->trunc = 0;
	s->hit = 0;
	bpf_loop(PATH_SZ / 2, walk_step, &c, 0);
	*trunc |= s->trunc;
	return s->off - off;
}

// walk is walk_to the root.
static __always_inline __u32 walk(struct scratch *s, struct vfsmount *vm, struct dentry *dentry, __u32 slot,
				  __u32 off, __u32 max, __u8 *trunc)
{
	return walk_to(s, vm, dentry, slot, off, max, trunc, 0);
}

// fd_file returns the current task's file with descriptor fd (0 if none), with four helper
// calls. Not through a typed task pointer: each typed access to struct task_struct made the
// verifier search its ~250 members, ~10 ms of loading.
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	__u64 tb[2];
	SPAN_READ(tb, fdt, struct fdtable, max_fds);
	unsigned int max = SPAN_GET(tb, fdt, struct fdtable, max_fds, max_fds, unsigned int);
	struct file **fds = SPAN_GET(tb, fdt, struct fdtable, max_fds, fd, struct file **);
	if (fd < 0 || fd >= max)
		return 0;
	struct file *f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

#endif

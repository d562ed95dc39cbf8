// path.h: the dentry walk that turns a struct path into its absolute name, shared by learn.c
// and guard.c. The including file includes scratch.h and defines DATA_MASK, NAME_SZ and PATH_SZ
// before including it.
#ifndef SYSPROF_PATH_H
#define SYSPROF_PATH_H

struct walk_ctx {
	struct dentry *dentry;
	struct mount *mnt;
	struct dentry *mnt_root;
	__u32 slot;
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
	struct dentry *d = c->dentry;
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	if (d == c->mnt_root || d == parent) {
		struct mount *m = c->mnt;
		struct mount *mp = BPF_CORE_READ(m, mnt_parent);
		if (d != c->mnt_root || mp == m || !mp)
			return 1; // the root, or a tree without a mount above it
		c->dentry = BPF_CORE_READ(m, mnt_mountpoint);
		c->mnt = mp;
		c->mnt_root = BPF_CORE_READ(mp, mnt.mnt_root);
		return 0;
	}
	__u32 off = s->off;
	if (off > s->limit) {
		s->trunc = 1;
		return 1;
	}
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	long n = bpf_probe_read_kernel_str(&s->data[off & DATA_MASK], NAME_SZ, name);
	if (n <= 0)
		return 1;
	s->off = off + n;
	c->dentry = parent;
	return 0;
}

// walk writes the components of path (leaf first, each NUL-terminated) into scratch slot data
// at off, at most max bytes. Returns the bytes written; *trunc is set when the path was longer.
static __always_inline __u32 walk(struct scratch *s, struct path *path, __u32 slot, __u32 off, __u32 max,
				  __u8 *trunc)
{
	struct walk_ctx c = {};
	struct vfsmount *vm = BPF_CORE_READ(path, mnt);
	c.dentry = BPF_CORE_READ(path, dentry);
	c.mnt = (struct mount *)((void *)vm - bpf_core_field_offset(struct mount, mnt));
	c.mnt_root = BPF_CORE_READ(vm, mnt_root);
	c.slot = slot;
	s->off = off;
	s->limit = off + max - NAME_SZ;
	s->trunc = 0;
	bpf_loop(PATH_SZ / 2, walk_step, &c, 0);
	*trunc |= s->trunc;
	return s->off - off;
}

static __always_inline struct file *fd_file(struct task_struct *task, long fd)
{
	struct files_struct *files = BPF_CORE_READ(task, files);
	struct fdtable *fdt = BPF_CORE_READ(files, fdt);
	unsigned int max = BPF_CORE_READ(fdt, max_fds);
	if (fd < 0 || fd >= max)
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

#endif

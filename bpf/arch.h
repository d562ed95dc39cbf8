// arch.h: the syscall ABI per target architecture (bpf2go's -target defines __TARGET_ARCH_*):
// where a syscall's six arguments are in struct pt_regs, which ABI a call came through, and the
// open flags whose values differ (O_DIRECTORY).
// vmlinux.h is x86_64's; arm64's register layout is declared here and CO-RE relocated against
// the running kernel's BTF like every other field.
#ifndef SYSPROF_ARCH_H
#define SYSPROF_ARCH_H

#define X32_SYSCALL_BIT 0x40000000

// A syscall's arguments in order (a[0] is the first).
struct sc_args {
	unsigned long a[6];
};

#if defined(__TARGET_ARCH_x86)

// x86_64 passes arguments in di, si, dx, r10, r8, r9. At exit they still hold them (only ax
// carries the result).
#define TS_COMPAT 0x0002
#define O_DIRECTORY 00200000 // asm-generic/fcntl.h

// The argument registers of struct pt_regs, r10 to di: adjacent, in this order (the layout the
// entry code pushes), so one read gets them all.
struct sc_regs_x86 {
	unsigned long r10, r9, r8, ax, cx, dx, si, di;
};

static __always_inline int read_sc_args(struct pt_regs *regs, struct sc_args *out)
{
	struct sc_regs_x86 r;
	if (bpf_probe_read_kernel(&r, sizeof(r), (void *)regs + bpf_core_field_offset(struct pt_regs, r10)))
		return -1;
	out->a[0] = r.di;
	out->a[1] = r.si;
	out->a[2] = r.dx;
	out->a[3] = r.r10;
	out->a[4] = r.r8;
	out->a[5] = r.r9;
	return 0;
}

// syscall_abi is SCARCH_X32 for the x32 bit, else SCARCH_I386 under TS_COMPAT, else
// SCARCH_X86_64, without branches.
static __always_inline __u32 syscall_abi(struct task_struct *cur, struct pt_regs *regs, long raw)
{
	__u32 x32 = ((__u64)raw >> 30) & 1; // X32_SYSCALL_BIT
	__u32 compat = (cur->thread_info.status >> 1) & 1; // TS_COMPAT
	return (compat & (x32 ^ 1)) | (x32 << 1);
}

// The first five arguments of the current task's syscall, read at its exit.
static __always_inline void exit_sc_args(struct pt_regs *regs, unsigned long *a)
{
	a[0] = BPF_CORE_READ(regs, di);
	a[1] = BPF_CORE_READ(regs, si);
	a[2] = BPF_CORE_READ(regs, dx);
	a[3] = BPF_CORE_READ(regs, r10);
	a[4] = BPF_CORE_READ(regs, r8);
}

#elif defined(__TARGET_ARCH_arm64)

// arm64 passes arguments in x0..x5 (regs[0..5]); x0 takes the result, so at exit the first
// argument is orig_x0. An AArch32 (compat) task runs with PSR_MODE32_BIT in its saved pstate
// (uapi asm/ptrace.h): architectural, unlike the thread flag's number.
#define PSR_MODE32_BIT 0x00000010
#define O_DIRECTORY 040000 // arm64's own (uapi asm/fcntl.h), as 32-bit arm's

struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
} __attribute__((preserve_access_index));

struct pt_regs___sysprof_arm64 {
	__u64 orig_x0;
} __attribute__((preserve_access_index));

static __always_inline int read_sc_args(struct pt_regs *regs, struct sc_args *out)
{
	return bpf_probe_read_kernel(out, sizeof(*out), (void *)regs + bpf_core_field_offset(struct user_pt_regs, regs));
}

// syscall_abi is SCARCH_I386's value (compat: arm) for an AArch32 task, else 0 (aarch64).
static __always_inline __u32 syscall_abi(struct task_struct *cur, struct pt_regs *regs, long raw)
{
	__u64 pstate = 0;
	bpf_probe_read_kernel(&pstate, sizeof(pstate), (void *)regs + bpf_core_field_offset(struct user_pt_regs, pstate));
	return (pstate / PSR_MODE32_BIT) & 1;
}

static __always_inline void exit_sc_args(struct pt_regs *regs, unsigned long *a)
{
	struct user_pt_regs *u = (struct user_pt_regs *)regs;
	a[0] = BPF_CORE_READ((struct pt_regs___sysprof_arm64 *)regs, orig_x0);
	a[1] = BPF_CORE_READ(u, regs[1]);
	a[2] = BPF_CORE_READ(u, regs[2]);
	a[3] = BPF_CORE_READ(u, regs[3]);
	a[4] = BPF_CORE_READ(u, regs[4]);
}

#else
#error "sysprof's eBPF programs know the syscall ABI of x86 and arm64 only (bpf2go -target)"
#endif

#endif

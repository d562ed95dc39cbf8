// span.h: reading a few fields of a kernel struct with one helper call, shared by learn.c and
// path.h (so guard.c too).
#ifndef SYSPROF_SPAN_H
#define SYSPROF_SPAN_H

// Every BPF_CORE_READ is a bpf_probe_read_kernel call (~10 ns each here, ~19 of them per file
// event before). SPAN_READ copies a struct's bytes from field lo on into buf (a __u64 array) with
// one call; SPAN_GET takes field f (of C type T) from it where the running kernel's layout (CO-RE
// offsets) puts f where this build's vmlinux.h does, and reads f on its own otherwise. buf is
// indexed with compile-time constants only: with CO-RE offsets as the index, the verifier
// tracked every access back through the program (~30 ms of loading). Like BPF_CORE_READ, a
// failed read yields zeroes.
#define SPAN_READ(buf, ptr, type, lo)                                                              \
	bpf_probe_read_kernel(&(buf), sizeof(buf), (void *)(ptr) + bpf_core_field_offset(type, lo))
#define SPAN_GET(buf, ptr, type, lo, f, T)                                                          \
	({                                                                                          \
		T __v = 0;                                                                          \
		const __u64 __d = __builtin_offsetof(type, f) - __builtin_offsetof(type, lo);        \
		_Static_assert(__builtin_offsetof(type, f) - __builtin_offsetof(type, lo) + sizeof(T) <= sizeof(buf), \
			       #f " is outside the span");                                          \
		if (bpf_core_field_offset(type, f) - bpf_core_field_offset(type, lo) == __d)         \
			__v = *(T *)((void *)&(buf) + __d);                                         \
		else                                                                                \
			bpf_probe_read_kernel(&__v, sizeof(T), (void *)(ptr) + bpf_core_field_offset(type, f)); \
		__v;                                                                                \
	})

#endif

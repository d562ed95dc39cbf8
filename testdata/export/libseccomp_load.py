#!/usr/bin/env python3
"""Load an OCI seccomp JSON (linux.seccomp) into libseccomp the way runc does: one
seccomp_rule_add_array per name and entry, for every listed architecture. Exit 0 when
libseccomp accepts every rule, 1 when it rejects one (printed), 2 when libseccomp is missing.
Used by export's tests; needs only python3 and libseccomp.so.2 (no headers, no cgo)."""
import ctypes
import ctypes.util
import json
import sys

OPS = {"SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4,
       "SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7}
ARCH = {"SCMP_ARCH_X86_64": 0xc000003e, "SCMP_ARCH_AARCH64": 0xc00000b7,
        "SCMP_ARCH_X86": 0x40000003, "SCMP_ARCH_X32": 0x4000003e, "SCMP_ARCH_ARM": 0x40000028}
EEXIST = 17


class Cmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


def action(name, errno):
    if name == "SCMP_ACT_ALLOW":
        return 0x7fff0000
    if name == "SCMP_ACT_ERRNO":
        return 0x00050000 | (1 if errno is None else errno)
    raise SystemExit("unexpected action " + name)


def main():
    path = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        print("libseccomp not found:", e)
        return 2
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(Cmp)]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    prof = json.load(open(sys.argv[1]))
    ctx = lib.seccomp_init(action(prof["defaultAction"], prof.get("defaultErrnoRet")))
    for a in prof.get("architectures") or []:
        rc = lib.seccomp_arch_add(ctx, ARCH[a])
        if rc not in (0, -EEXIST):
            print("arch", a, "rejected:", rc)
            return 1
    bad = 0
    for entry in prof.get("syscalls") or []:
        args = entry.get("args") or []
        arr = (Cmp * max(1, len(args)))(*[Cmp(x["index"], OPS[x["op"]], x["value"],
                                              x.get("valueTwo", 0)) for x in args])
        for name in entry["names"]:
            # runc skips names libseccomp does not know on any architecture.
            nr = lib.seccomp_syscall_resolve_name_arch(0, name.encode())
            if nr < 0:
                continue
            rc = lib.seccomp_rule_add_array(ctx, action(entry["action"], entry.get("errnoRet")),
                                            nr, len(args), arr)
            if rc != 0:
                print("rule rejected (%d): %s %s" % (rc, name, json.dumps(entry)))
                bad += 1
    lib.seccomp_release(ctx)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

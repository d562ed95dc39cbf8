# The eighth red team's payload (e2e/redteam8_test.go): one attack per argument, run in place
# of a learned tool's python3; each prints "NAME: ok [detail]" or "NAME: ERRNO".
import ctypes, errno, os, socket, stat, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": {"renameat2": 316, "copy_file_range": 326, "memfd_secret": 447, "pidfd_open": 434, "pidfd_getfd": 438,
                 "fanotify_init": 300, "ptrace": 101, "prctl": 157, "process_vm_readv": 310, "kcmp": 312},
      "aarch64": {"renameat2": 276, "copy_file_range": 285, "memfd_secret": 447, "pidfd_open": 434, "pidfd_getfd": 438,
                  "fanotify_init": 262, "ptrace": 117, "prctl": 167, "process_vm_readv": 270, "kcmp": 272}}[os.uname().machine]


def sc(name, *args):
    r = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def act(name, f):
    try:
        r = f()
        print(name + ": ok" + ("" if r is None else " " + str(r)), flush=True)
    except OSError as e:
        print(name + ": " + errno.errorcode.get(e.errno, str(e.errno)), flush=True)


def acl(*entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


U = 0xFFFFFFFF
D = os.environ.get("RT8_DIR", "build")  # where the files that leave the run are written


def touch(p, data=b"x"):
    with open(p, "wb") as f:
        f.write(data)
    return p


def tmpfile_link(dst):
    fd = os.open(os.path.dirname(dst), os.O_TMPFILE | os.O_WRONLY, 0o755)
    os.write(fd, b"#!/bin/sh\ntouch PWNED\n")
    os.link("/proc/self/fd/%d" % fd, dst, follow_symlinks=True)


def exchange(a, b):
    sc("renameat2", -100, a.encode(), -100, b.encode(), 2)  # RENAME_EXCHANGE


def whiteout_rename(a, b):
    sc("renameat2", -100, a.encode(), -100, b.encode(), 4)  # RENAME_WHITEOUT


def cfr(src):
    s = os.open(src, os.O_RDONLY)
    d = os.open(touch("build/stolen", b""), os.O_WRONLY)
    return sc("copy_file_range", s, None, d, None, 4096, 0)


def ficlone(src):
    import fcntl
    s = os.open(src, os.O_RDONLY)
    d = os.open(touch("build/cloned", b""), os.O_WRONLY)
    FICLONERANGE = 0x4020940D
    fcntl.ioctl(d, FICLONERANGE, struct.pack("<qQQQ", s, 0, 0, 0))


def vmread(pid):
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    return sc("process_vm_readv", pid, local, 1, remote, 1, 0)


def write_file(p, data=b"x"):
    with open(p, "wb", buffering=0) as f:
        f.write(data)


def scm_rights(n):
    # fds in flight: a socketpair's queue of SCM_RIGHTS messages nobody reads
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.setblocking(False)
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(200)]
    sent = 0
    try:
        for _ in range(n):
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
            sent += len(fds)
    except OSError as e:
        return "%d %s" % (sent, errno.errorcode.get(e.errno))
    return "%d" % sent


ACTIONS = {
    "setcap": lambda: os.setxattr(touch(D + "/cap"), "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)),
    "acl-user": lambda: os.setxattr(touch(D + "/acl"), "system.posix_acl_access", acl((1, 6, U), (2, 6, 1), (4, 0, U), (0x10, 6, U), (0x20, 0, U))),
    # user::rw- group::--- mask::rw- other::rw-: ids the sandbox maps (none named)
    "acl-others": lambda: os.setxattr(touch(D + "/acl-others"), "system.posix_acl_access", acl((1, 6, U), (4, 0, U), (0x10, 6, U), (0x20, 6, U))),
    "trusted-redirect": lambda: os.setxattr(touch("build/redir"), "trusted.overlay.redirect", b"/etc/passwd"),
    "user-overlay": lambda: os.setxattr(touch("build/meta"), "user.overlay.metacopy", b""),
    "whiteout": lambda: os.mknod(D + "/out", stat.S_IFCHR | 0o600, os.makedev(0, 0)) if not os.unlink(D + "/out") else None,
    "whiteout-host": lambda: os.mknod("Makefile.orig", stat.S_IFCHR | 0o600, os.makedev(0, 0)),
    "tmpfile-hook": lambda: tmpfile_link(".github/workflows/evil.yml"),
    "exchange-workflow": lambda: exchange(touch("build/evil.yml", b"on: push\n"), ".github/workflows/ci.yml"),
    "rename-whiteout": lambda: whiteout_rename("Makefile", "build/mk"),
    "cfr-hidden": lambda: cfr(".env"),
    "ficlone-hidden": lambda: ficlone(".env"),
    "fanotify": lambda: sc("fanotify_init", 0, 0),
    "ptrace-parent": lambda: sc("ptrace", 16, os.getppid(), 0, 0),  # PTRACE_ATTACH
    "ptrace-init": lambda: sc("ptrace", 16, 1, 0, 0),  # the init stage, PID 1
    "ptrace-seize-init": lambda: sc("ptrace", 0x4206, 1, 0, 0),  # PTRACE_SEIZE
    "vmread-init": lambda: vmread(1),
    "kcmp-init": lambda: sc("kcmp", 1, os.getpid(), 0, 0, 0),
    "pidfd-getfd": lambda: sc("pidfd_getfd", sc("pidfd_open", os.getppid(), 0), 3, 0),
    "prctl-mm": lambda: sc("prctl", 35, 1, 0, 0, 0),  # PR_SET_MM, PR_SET_MM_START_CODE
    "memfd-secret": lambda: sc("memfd_secret", 0),
    "proc-attr": lambda: write_file("/proc/self/attr/current", b"unconfined"),
    "proc-sys": lambda: write_file("/proc/sys/kernel/hostname", b"pwned"),
    "sysfs": lambda: write_file("/sys/kernel/mm/transparent_hugepage/enabled", b"never"),
    "scm-rights": lambda: scm_rights(1 << 20),
    # two names that differ only in bytes that are not UTF-8, held (the work tree, not build/)
    "badnames": lambda: [touch(os.fsencode(n)) for n in ("held\udcff", "held\udcfe")] and None,
    "longname": lambda: touch("x" * 256),
}

for a in sys.argv[1:]:
    act(a, ACTIONS[a])
print("payload-done", flush=True)

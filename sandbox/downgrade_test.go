package sandbox

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"golang.org/x/sys/unix"
)

func fullLandlock() *Landlock {
	return &Landlock{
		Read:              []string{"/usr"},
		Write:             []string{"/work"},
		Exec:              []string{"/usr/bin"},
		Devices:           []string{"/dev/null"},
		RestrictTCP:       true,
		ConnectTCP:        []uint16{443},
		BindTCP:           []uint16{8080},
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
	}
}

func TestDowngrade(t *testing.T) {
	readOnly := &Landlock{Read: []string{"/usr"}, Exec: []string{"/usr/bin"}}
	tests := []struct {
		name        string
		in          *Landlock
		abi         int
		wantNil     bool
		wantTCP     bool
		wantSignals bool
		wantAbstr   bool
		wantDropped []string // prefixes, in order
	}{
		{name: "nil plan", in: nil, abi: 7, wantNil: true},
		{name: "abi 7 keeps everything", in: fullLandlock(), abi: 7, wantTCP: true, wantSignals: true, wantAbstr: true},
		{name: "newer kernel than known", in: fullLandlock(), abi: 9, wantTCP: true, wantSignals: true, wantAbstr: true},
		{name: "abi 6", in: fullLandlock(), abi: 6, wantTCP: true, wantSignals: true, wantAbstr: true},
		{name: "abi 5 loses scopes", in: fullLandlock(), abi: 5, wantTCP: true,
			wantDropped: []string{"landlock scope signal", "landlock scope abstract unix"}},
		{name: "abi 4 loses ioctl_dev", in: fullLandlock(), abi: 4, wantTCP: true,
			wantDropped: []string{"landlock ioctl_dev", "landlock scope signal", "landlock scope abstract unix"}},
		{name: "abi 3 loses tcp", in: fullLandlock(), abi: 3,
			wantDropped: []string{"landlock tcp", "landlock ioctl_dev", "landlock scope signal", "landlock scope abstract unix"}},
		{name: "abi 2 loses truncate", in: fullLandlock(), abi: 2,
			wantDropped: []string{"landlock truncate", "landlock tcp", "landlock ioctl_dev", "landlock scope signal", "landlock scope abstract unix"}},
		{name: "abi 1 with Write drops the layer (refer)", in: fullLandlock(), abi: 1, wantNil: true,
			wantDropped: []string{"landlock refer"}},
		{name: "abi 1 without Write keeps fs rules", in: readOnly, abi: 1,
			wantDropped: []string{"landlock truncate", "landlock ioctl_dev"}},
		{name: "no landlock", in: fullLandlock(), abi: 0, wantNil: true, wantDropped: []string{"landlock (ABI 1)"}},
		{name: "abi 3 without tcp or scopes asked", in: readOnly, abi: 3,
			wantDropped: []string{"landlock ioctl_dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *Landlock
			if tt.in != nil {
				before = cloneLandlock(tt.in)
			}
			kept, dropped := Downgrade(tt.in, tt.abi)
			if !reflect.DeepEqual(tt.in, before) {
				t.Errorf("Downgrade modified its input: %+v, was %+v", tt.in, before)
			}
			if (kept == nil) != tt.wantNil {
				t.Fatalf("kept = %+v, want nil: %v", kept, tt.wantNil)
			}
			if len(dropped) != len(tt.wantDropped) {
				t.Fatalf("dropped = %q, want prefixes %q", dropped, tt.wantDropped)
			}
			for i, p := range tt.wantDropped {
				if !strings.HasPrefix(dropped[i], p) {
					t.Errorf("dropped[%d] = %q, want prefix %q", i, dropped[i], p)
				}
			}
			if kept == nil {
				return
			}
			if kept.RestrictTCP != tt.wantTCP || kept.ScopeSignals != tt.wantSignals || kept.ScopeAbstractUnix != tt.wantAbstr {
				t.Errorf("kept tcp=%v signals=%v abstract=%v, want %v %v %v", kept.RestrictTCP, kept.ScopeSignals,
					kept.ScopeAbstractUnix, tt.wantTCP, tt.wantSignals, tt.wantAbstr)
			}
			if !slices.Equal(kept.Read, tt.in.Read) || !slices.Equal(kept.Write, tt.in.Write) || !slices.Equal(kept.Exec, tt.in.Exec) {
				t.Errorf("kept paths changed: %+v", kept)
			}
		})
	}
}

// TestDowngradeNeverForbidsWhatThePlanAllows checks the model for every ABI: a right the plan
// grants on a path is either not handled by the compiled ruleset (so the kernel allows it
// everywhere) or granted by a rule on that path; ABI 1's implicit refer denial only happens when
// nothing is enforced; and every weakening is reported.
func TestDowngradeNeverForbidsWhatThePlanAllows(t *testing.T) {
	plans := []*Landlock{
		fullLandlock(),
		{Read: []string{"/a"}},
		{Write: []string{"/w"}, RestrictTCP: true},
		{Exec: []string{"/x"}, ScopeSignals: true},
		{Devices: []string{"/dev/tty"}, ScopeAbstractUnix: true, RestrictTCP: true, ConnectTCP: []uint16{1, 2}},
	}
	for _, l := range plans {
		for abi := 0; abi <= 10; abi++ {
			kept, dropped := Downgrade(l, abi)
			say := strings.Join(dropped, "\n")
			if kept == nil {
				if len(dropped) == 0 {
					t.Errorf("abi %d: layer dropped silently for %+v", abi, l)
				}
				continue
			}
			rs := compile(kept, abi)
			if abi == 1 && rs.HandledFS != 0 && len(l.Write) > 0 {
				t.Errorf("abi 1: Write paths under a handled ruleset: refer would be denied")
			}
			granted := map[string]uint64{}
			for _, r := range rs.Paths {
				granted[r.Path] |= r.Access
			}
			for _, c := range []struct {
				paths  []string
				rights uint64
			}{{l.Read, rightsRead}, {l.Write, rightsWrite}, {l.Exec, rightsExec}, {l.Devices, rightsDevice}} {
				for _, p := range c.paths {
					if missing := c.rights & rs.HandledFS &^ granted[p]; missing != 0 {
						t.Errorf("abi %d: %s handled but not granted on %s", abi, fsRightsString(missing), p)
					}
				}
			}
			for _, want := range []struct {
				right uint64
				ports []uint16
			}{{netConnectTCP, l.ConnectTCP}, {netBindTCP, l.BindTCP}} {
				for _, p := range want.ports {
					ok := rs.HandledNet&want.right == 0
					for _, pr := range rs.Ports {
						ok = ok || (pr.Port == p && pr.Access&want.right != 0)
					}
					if !ok {
						t.Errorf("abi %d: port %d handled but not granted", abi, p)
					}
				}
			}
			if rs.Scoped&scopeSignal != 0 && !l.ScopeSignals || rs.Scoped&scopeAbstractUnix != 0 && !l.ScopeAbstractUnix {
				t.Errorf("abi %d: scope %b not asked for", abi, rs.Scoped)
			}
			// Every weakening is reported.
			if l.RestrictTCP && rs.HandledNet == 0 && !strings.Contains(say, "tcp") {
				t.Errorf("abi %d: TCP not enforced and not reported: %q", abi, dropped)
			}
			if l.ScopeSignals && rs.Scoped&scopeSignal == 0 && !strings.Contains(say, "signal") {
				t.Errorf("abi %d: signal scope not enforced and not reported", abi)
			}
			if l.ScopeAbstractUnix && rs.Scoped&scopeAbstractUnix == 0 && !strings.Contains(say, "abstract") {
				t.Errorf("abi %d: abstract unix scope not enforced and not reported", abi)
			}
			for _, r := range []struct {
				bit  uint64
				name string
			}{{fsTruncate, "truncate"}, {fsIoctlDev, "ioctl_dev"}} {
				if rs.HandledFS&r.bit == 0 && !strings.Contains(say, r.name) {
					t.Errorf("abi %d: %s not handled and not reported", abi, r.name)
				}
			}
		}
	}
}

func TestCompile(t *testing.T) {
	rs := compile(fullLandlock(), 7)
	if rs.HandledFS != 1<<16-1 || rs.HandledNet != netBindTCP|netConnectTCP || rs.Scoped != scopeSignal|scopeAbstractUnix {
		t.Errorf("handled fs=%#x net=%#x scoped=%#x", rs.HandledFS, rs.HandledNet, rs.Scoped)
	}
	want := []pathRule{
		{"/usr", "read", rightsRead},
		{"/work", "write", rightsWrite},
		{"/usr/bin", "exec", rightsExec},
		{"/dev/null", "device", rightsDevice},
	}
	if !slices.Equal(rs.Paths, want) {
		t.Errorf("paths = %+v, want %+v", rs.Paths, want)
	}
	if rightsWrite&fsExecute != 0 {
		t.Error("Write grants execute: a writable directory must not be an exec allowance")
	}
	if want := []portRule{{443, netConnectTCP}, {8080, netBindTCP}}; !slices.Equal(rs.Ports, want) {
		t.Errorf("ports = %+v, want %+v", rs.Ports, want)
	}
	// ABI 2: no truncate, no ioctl_dev in any rule.
	for _, r := range compile(fullLandlock(), 2).Paths {
		if r.Access&(fsTruncate|fsIoctlDev) != 0 {
			t.Errorf("abi 2 rule %+v has a right the kernel does not know", r)
		}
	}
	if got := fsRightsString(rightsRead); got != "{read_file,read_dir}" {
		t.Errorf("fsRightsString = %q", got)
	}
}

// TestCompileDoesNotMutatePlan: compiling and downgrading for this host leave the Plan as it was
// (spec vs live object).
func TestCompileDoesNotMutatePlan(t *testing.T) {
	p := Plan{Landlock: fullLandlock(), Writable: []string{"/b", "/a"}}
	before := Plan{Landlock: fullLandlock(), Writable: []string{"/b", "/a"}}
	k, _ := Downgrade(p.Landlock, 3)
	compile(k, 3)
	p.CloneFlags(false)
	topLevel(p.Writable)
	if !reflect.DeepEqual(p, before) {
		t.Errorf("plan changed: %+v", p)
	}
}

func TestCloneFlagsAndMappings(t *testing.T) {
	p := &Plan{}
	if got := p.CloneFlags(false); got != unix.CLONE_NEWNS|unix.CLONE_NEWIPC|unix.CLONE_NEWPID {
		t.Errorf("no userns, no netns: %#x", got)
	}
	p.NetNS = true
	if got := p.CloneFlags(true); got != unix.CLONE_NEWNS|unix.CLONE_NEWIPC|unix.CLONE_NEWPID|unix.CLONE_NEWNET|unix.CLONE_NEWUSER {
		t.Errorf("userns, netns: %#x", got)
	}
	u, g := UserNSMappings(1000, 100)
	if !slices.Equal(u, []syscall.SysProcIDMap{{ContainerID: 1000, HostID: 1000, Size: 1}}) ||
		!slices.Equal(g, []syscall.SysProcIDMap{{ContainerID: 100, HostID: 100, Size: 1}}) {
		t.Errorf("mappings %+v %+v", u, g)
	}
	a := p.NamespaceAttr(ChooseIdentity(1000, 1000, 100, "", "", false, nil, Tree{}))
	if a.GidMappingsEnableSetgroups || len(a.AmbientCaps) != 7 || a.Cloneflags&unix.CLONE_NEWUSER == 0 {
		t.Errorf("NamespaceAttr(user) = %+v", a)
	}
	if a := p.NamespaceAttr(ChooseIdentity(0, 0, 0, "", "", true, nil, Tree{})); a.UidMappings != nil || a.AmbientCaps != nil || a.Cloneflags&unix.CLONE_NEWUSER != 0 {
		t.Errorf("NamespaceAttr(host root) = %+v", a)
	}
}

// TestChooseIdentity: as root the command never runs as host root unless the profile says so:
// plain root is uid 0 only inside its user namespace (RootUID on the host, root's files its own
// through the idmapped replica), and where / cannot be idmapped the weaker model says so. A
// work tree on a mount that cannot be idmapped (an overlay that is not /) is its owner's: the
// command is that owner; a tree of root's keeps root-idmap with a note (git may refuse it), or
// the weaker model when --degrade=userns asks for it (never host uid 0 unasked).
func TestChooseIdentity(t *testing.T) {
	noIdmap := errors.New("/ is on overlayfs")
	ovl := errors.New("/work is on overlayfs")
	for _, tc := range []struct {
		name             string
		euid, uid, gid   int
		sudoUID, sudoGID string
		hostRoot         bool
		rootIdmap        error
		tree             Tree
		model            string
		userNS           bool
		hostUID, fileUID int
		weaker, note     bool
	}{
		{"ordinary user", 1000, 1000, 100, "", "", false, nil, Tree{}, "user", true, 1000, 1000, false, false},
		{"ordinary user, hostRoot ignored", 1000, 1000, 100, "", "", true, nil, Tree{}, "user", true, 1000, 1000, false, false},
		{"root", 0, 0, 0, "", "", false, nil, Tree{}, "root-idmap", true, RootUID, 0, false, false},
		{"root, / not idmappable", 0, 0, 0, "", "", false, noIdmap, Tree{}, "root-userns", true, 0, 0, true, false},
		{"root asks for real root", 0, 0, 0, "", "", true, nil, Tree{}, "host-root", false, 0, 0, false, false},
		{"sudo", 0, 0, 0, "1000", "1000", false, nil, Tree{}, "sudo", true, 1000, 1000, false, false},
		{"sudo, / not idmappable", 0, 0, 0, "1000", "1000", false, noIdmap, Tree{}, "sudo", true, 1000, 1000, false, false},
		{"sudo from root", 0, 0, 0, "0", "0", false, nil, Tree{}, "root-idmap", true, RootUID, 0, false, false},
		{"sudo garbage", 0, 0, 0, "x", "1000", false, nil, Tree{}, "root-idmap", true, RootUID, 0, false, false},
		{"sudo, real root asked", 0, 0, 0, "1000", "1000", true, nil, Tree{}, "host-root", false, 0, 0, false, false},
		{"root, tree of a user's on an overlay", 0, 0, 0, "", "", false, nil, Tree{Idmap: ovl, UID: 1000, GID: 100}, "root-owner", true, 1000, 1000, false, false},
		{"root, tree of root's on an overlay", 0, 0, 0, "", "", false, nil, Tree{Idmap: ovl}, "root-idmap", true, RootUID, 0, false, true},
		{"root, tree of root's on an overlay, --degrade=userns", 0, 0, 0, "", "", false, nil, Tree{Idmap: ovl, HostUID0: true}, "root-userns", true, 0, 0, true, false},
		{"root, tree of root's on ext4, --degrade=userns", 0, 0, 0, "", "", false, nil, Tree{HostUID0: true}, "root-idmap", true, RootUID, 0, false, false},
		{"root, / and root's tree not idmappable", 0, 0, 0, "", "", false, noIdmap, Tree{Idmap: ovl}, "root-userns", true, 0, 0, true, false},
		{"root, tree of a user's, group root, on an overlay", 0, 0, 0, "", "", false, nil, Tree{Idmap: ovl, UID: 1000}, "root-idmap", true, RootUID, 0, false, true},
		{"root, tree of a user's on an overlay, --degrade=userns", 0, 0, 0, "", "", false, nil, Tree{Idmap: ovl, UID: 1000, GID: 100, HostUID0: true}, "root-owner", true, 1000, 1000, false, false},
		{"root, tree of a user's on ext4", 0, 0, 0, "", "", false, nil, Tree{UID: 1000, GID: 100}, "root-idmap", true, RootUID, 0, false, false},
		{"root, / and a user's tree not idmappable", 0, 0, 0, "", "", false, noIdmap, Tree{Idmap: ovl, UID: 1000, GID: 100}, "root-owner", true, 1000, 1000, false, false},
		{"root, overlay tree, real root asked", 0, 0, 0, "", "", true, nil, Tree{Idmap: ovl, UID: 1000, GID: 100}, "host-root", false, 0, 0, false, false},
		{"sudo, overlay tree", 0, 0, 0, "1000", "1000", false, nil, Tree{Idmap: ovl, UID: 1000, GID: 100}, "sudo", true, 1000, 1000, false, false},
	} {
		id := ChooseIdentity(tc.euid, tc.uid, tc.gid, tc.sudoUID, tc.sudoGID, tc.hostRoot, tc.rootIdmap, tc.tree)
		if id.Model != tc.model || id.UserNS != tc.userNS || id.UID != tc.hostUID || id.FileUID != tc.fileUID || (id.Weaker != "") != tc.weaker || (id.Note != "") != tc.note {
			t.Errorf("%s: %+v, want model %s userns %v uid %d file uid %d weaker %v note %v", tc.name, id, tc.model, tc.userNS, tc.hostUID, tc.fileUID, tc.weaker, tc.note)
		}
		if tc.note && (!strings.Contains(id.Note, "dubious ownership") || !strings.Contains(id.Note, "--degrade=userns") || !strings.Contains(id.Note, ovl.Error())) {
			t.Errorf("%s: note %q: want why (the mount), what git says and what to do", tc.name, id.Note)
		}
		if (id.Model == "sudo" || id.Model == "root-owner" || id.Model == "root-idmap") && (id.Cred == nil || len(id.Cred.Groups) != 0 || id.Cred.NoSetGroups) {
			t.Errorf("%s: credential %+v: must drop root's supplementary groups", tc.name, id.Cred)
		}
		if id.Model == "root-idmap" {
			if !id.Idmap || len(id.Uids) != 1 || id.Uids[0] != (syscall.SysProcIDMap{ContainerID: 0, HostID: RootUID, Size: 1}) || id.Gids[0].HostID != RootUID {
				t.Errorf("%s: mappings %+v %+v: root inside must be RootUID outside, and only that", tc.name, id.Uids, id.Gids)
			}
			if a := (&Plan{}).NamespaceAttr(id); !a.GidMappingsEnableSetgroups || a.Credential == nil {
				t.Errorf("%s: NamespaceAttr %+v: the stage must drop root's groups", tc.name, a)
			}
		}
		if id.Detail() == id.Model {
			t.Errorf("%s: no detail", tc.name)
		}
	}
}

func TestErrorsAreTyped(t *testing.T) {
	err := error(&LayerError{Layer: LayerLandlock, Err: &DegradedError{ABI: 3, Dropped: []string{"x"}}})
	if !errors.Is(err, ErrNotSupported) {
		t.Error("degraded landlock is not ErrNotSupported")
	}
	var le *LayerError
	if !errors.As(err, &le) || le.Layer != LayerLandlock || !strings.HasPrefix(err.Error(), "sandbox landlock: ") {
		t.Errorf("LayerError: %v", err)
	}
	if errors.Is(&ProbeError{Feature: "landlock", Err: unix.EPERM}, ErrNotSupported) {
		t.Error("could-not-tell must not look like not-supported")
	}
	if !errors.Is(&UnsupportedError{Feature: "landlock"}, ErrNotSupported) {
		t.Error("UnsupportedError is not ErrNotSupported")
	}
	if err := (&Plan{Hidden: []string{"rel"}}).Validate(); !errors.As(err, &le) || le.Layer != LayerMounts {
		t.Errorf("Validate relative hidden = %v", err)
	}
}

// TestLandlockABIProbe: on this machine kind the probe answers "available" (KERNEL-NOTES: ABI 7).
func TestLandlockABIProbe(t *testing.T) {
	abi, err := LandlockABI()
	if err != nil {
		var ue *UnsupportedError
		var pe *ProbeError
		if !errors.As(err, &ue) && !errors.As(err, &pe) {
			t.Fatalf("LandlockABI error is untyped: %v", err)
		}
		testutil.RequireNoErr(t, "landlock", err)
	}
	if abi < 1 {
		t.Fatalf("LandlockABI = %d with no error", abi)
	}
	t.Logf("Landlock ABI %d", abi)
}

// TestUserNamespacesProbe: the probe answers with a typed result; on this machine kind
// (KERNEL-NOTES: unprivileged user namespaces allowed) it says available.
func TestUserNamespacesProbe(t *testing.T) {
	err := UserNamespaces()
	var ue *UnsupportedError
	var pe *ProbeError
	if err != nil && !errors.As(err, &ue) && !errors.As(err, &pe) {
		t.Fatalf("UserNamespaces error is untyped: %v", err)
	}
	testutil.RequireNoErr(t, "unprivileged user namespaces", err)
}

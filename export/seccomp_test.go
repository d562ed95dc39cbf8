package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// decodeOCI reads an oci export strictly into the runtime-spec type runc itself uses.
func decodeOCI(t *testing.T, b []byte) specs.LinuxSeccomp {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s specs.LinuxSeccomp
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("oci export does not decode as specs.LinuxSeccomp: %v", err)
	}
	return s
}

func exportOCI(t *testing.T, p *policy.Profile) specs.LinuxSeccomp {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p, "oci", Options{}); err != nil {
		t.Fatal(err)
	}
	return decodeOCI(t, buf.Bytes())
}

func TestOCIFields(t *testing.T) {
	s := exportOCI(t, loadFixture(t, "cargo-build.yaml"))
	if s.DefaultAction != specs.ActErrno || s.DefaultErrnoRet == nil || *s.DefaultErrnoRet != 1 {
		t.Errorf("default: %v errno %v, want SCMP_ACT_ERRNO with EPERM", s.DefaultAction, s.DefaultErrnoRet)
	}
	if want := []specs.Arch{specs.ArchAARCH64, specs.ArchX86_64}; !slices.Equal(s.Architectures, want) {
		t.Errorf("architectures %v, want %v", s.Architectures, want)
	}
	first := s.Syscalls[0]
	if first.Action != specs.ActAllow || len(first.Args) != 0 || !slices.Contains(first.Names, "read") || slices.Contains(first.Names, "socket") {
		t.Errorf("first entry should allow the rule-free syscalls (read) and not socket: %+v", first)
	}
	count := map[string]int{}
	for _, sc := range s.Syscalls {
		for _, a := range sc.Args {
			if a.Op != specs.OpEqualTo && a.Op != specs.OpMaskedEqual && a.Op != specs.OpLessThan && a.Op != specs.OpGreaterThan {
				t.Errorf("%v: unexpected op %s", sc.Names, a.Op)
			}
		}
		seen := map[uint]bool{}
		for _, a := range sc.Args {
			if seen[a.Index] {
				t.Errorf("%v: two comparisons of argument %d in one entry (libseccomp rejects that)", sc.Names, a.Index)
			}
			seen[a.Index] = true
		}
		if sc.Action == specs.ActAllow && len(sc.Args) > 0 {
			count[sc.Names[0]]++
		}
		if sc.Names[0] == "clone3" && (sc.Action != specs.ActErrno || sc.ErrnoRet == nil || *sc.ErrnoRet != 38) {
			t.Errorf("clone3 should answer ENOSYS (38): %+v", sc)
		}
	}
	// socket: 3 domains × 2 types × 32 blocks of protocols around IPPROTO_MPTCP (enforce's
	// hardening); personality: 2 values; prctl: 3 options; clone: 1 mask.
	// prctl: 3 options + 4 of runc's own (runtimeValues).
	for name, want := range map[string]int{"socket": 192, "personality": 2, "prctl": 7, "clone": 1} {
		if count[name] != want {
			t.Errorf("%s: %d conditional allow entries, want %d", name, count[name], want)
		}
	}
}

// verdict is what a seccomp filter answers: allow, or an errno.
type verdict struct {
	allow bool
	errno uint
}

// evalOCI runs a call through the exported entries the way libseccomp's filter does. It
// returns every verdict of the matching entries (the default's when none match) and fails when
// an allow and a deny entry match one call: libseccomp's answer would then depend on its rule
// order. Two errnos may match (a call breaking two rules); either is a right answer.
func evalOCI(t *testing.T, s specs.LinuxSeccomp, name string, args [6]uint64) []verdict {
	t.Helper()
	var got []verdict
	for _, sc := range s.Syscalls {
		if !slices.Contains(sc.Names, name) || !argsMatch(sc.Args, args) {
			continue
		}
		v := verdict{allow: sc.Action == specs.ActAllow}
		if sc.Action == specs.ActErrno {
			v.errno = 1
			if sc.ErrnoRet != nil {
				v.errno = *sc.ErrnoRet
			}
		}
		if len(got) > 0 && got[0].allow != v.allow {
			t.Fatalf("%s%v matches both an allow and a deny entry", name, args)
		}
		if !slices.Contains(got, v) {
			got = append(got, v)
		}
	}
	if len(got) == 0 {
		return []verdict{{errno: *s.DefaultErrnoRet}}
	}
	return got
}

func argsMatch(cmp []specs.LinuxSeccompArg, args [6]uint64) bool {
	for _, a := range cmp {
		x := args[a.Index]
		var ok bool
		switch a.Op {
		case specs.OpEqualTo:
			ok = x == a.Value
		case specs.OpNotEqual:
			ok = x != a.Value
		case specs.OpLessThan:
			ok = x < a.Value
		case specs.OpGreaterThan:
			ok = x > a.Value
		case specs.OpMaskedEqual:
			ok = x&a.Value == a.ValueTwo
		default:
			panic("unknown op " + a.Op)
		}
		if !ok {
			return false
		}
	}
	return true
}

func mustValue(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := policy.ParseValue(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustValues(t *testing.T, ss []string) []uint64 {
	var out []uint64
	for _, s := range ss {
		out = append(out, mustValue(t, s))
	}
	return out
}

// enforced answers a call as sysprof enforce's compiled filter does (package seccomp's Spec,
// itself tested against the BPF it generates), with the oci runtime set: allowed, or the
// errnos a right export may answer (the failing checks' errnos; EPERM for sysprof's
// supervisor, and for a flags check whose errno an export cannot write).
func enforced(t *testing.T, f *seccomp.Filter, name string, args [6]uint64) (allow bool, errnos []uint) {
	t.Helper()
	nr, ok := arch.X86_64.SyscallNames[name]
	if !ok {
		t.Fatalf("no syscall %s on x86_64", name)
	}
	got := f.Spec.Eval(uint32(arch.X86_64.ID), uint32(nr), args)
	if got == seccomp.RetAllow {
		return true, nil
	}
	errnos = []uint{errnoOf(got)}
	if r := f.Rules[name]; r != nil && r.Ret == seccomp.RetAllow {
		for _, c := range r.Checks {
			if !c.OK(args[c.Arg]) {
				errnos = append(errnos, errnoOf(c.Fail))
				if c.HasAllowedBits || c.DenyBits != 0 {
					errnos = append(errnos, errnoEPERM)
				}
			}
		}
	}
	return false, errnos
}

// interesting returns argument values near the profile's constants for one syscall's rules.
func interesting(t *testing.T, p *policy.Profile, name string, arg int) []uint64 {
	vs := []uint64{0, 1, ^uint64(0), 1 << 32, 0xffffffff, unix.TIOCSTI, unix.TIOCLINUX, 1<<32 | unix.TIOCSTI, seccomp.IPProtoMPTCP, 1<<32 | seccomp.IPProtoMPTCP, unix.CLONE_NEWUSER, unix.CLONE_NEWNS | 1<<32}
	for _, r := range p.Syscalls.Args {
		if r.Syscall != name || r.Arg != arg {
			continue
		}
		for _, l := range [][]string{r.Values, r.Deny, r.Flags} {
			for _, v := range mustValues(t, l) {
				vs = append(vs, v, v-1, v+1, v|1<<32, v|0x80000, v|0x40000000)
			}
		}
	}
	return vs
}

// TestOCIMatchesEnforce checks, call by call, that the oci export allows exactly what sysprof
// enforce allows (hardening and 32-bit arguments included) and answers with the rule's errno:
// random calls built around the profile's constants.
func TestOCIMatchesEnforce(t *testing.T) {
	for _, fixture := range []string{"cargo-build.yaml", "rules.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			p := loadFixture(t, fixture)
			s := exportOCI(t, p)
			f, err := seccomp.Compile(p, "x86_64", seccomp.Options{Extra: runtimeSyscalls["oci"]})
			if err != nil {
				t.Fatal(err)
			}
			check := func(name string, args [6]uint64) {
				t.Helper()
				allow, errnos := enforced(t, f, name, args)
				for _, got := range evalOCI(t, s, name, args) {
					if got.allow != allow {
						t.Fatalf("%s%x: export allow=%v, profile allow=%v", name, args, got.allow, allow)
					}
					if !allow && !slices.Contains(errnos, got.errno) {
						t.Fatalf("%s%x: export answers errno %d, profile wants one of %v", name, args, got.errno, errnos)
					}
				}
			}
			var names []string
			for _, sc := range p.Syscalls.Allow {
				names = append(names, sc.Name)
			}
			for _, r := range p.Syscalls.Args {
				names = append(names, r.Syscall)
			}
			names = append(names, "ptrace", "mount", "fstatfs")
			rng := rand.New(rand.NewPCG(1, 2))
			for _, name := range names {
				var pools [6][]uint64
				for i := range pools {
					pools[i] = interesting(t, p, name, i)
				}
				for range 3000 {
					var args [6]uint64
					for i := range args {
						if rng.IntN(8) == 0 {
							args[i] = rng.Uint64()
						} else {
							args[i] = pools[i][rng.IntN(len(pools[i]))]
						}
					}
					check(name, args)
				}
			}
		})
	}
}

// TestUnrestrictedRule checks that a rule restricting nothing (a merge of a value list and a
// flag list leaves one) allows every value, as the enforcer and diff read it, rather than
// denying the syscall.
func TestUnrestrictedRule(t *testing.T) {
	p := loadFixture(t, "rules.yaml")
	p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "write", Arg: 2})
	s := exportOCI(t, p)
	for _, got := range evalOCI(t, s, "write", [6]uint64{1, 0x1000, 42}) {
		if !got.allow {
			t.Errorf("write with an unrestricting rule: export answers errno %d, want allowed", got.errno)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, p, "systemd", Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "write is left out") || strings.Contains(buf.String(), "write(arg 2)") {
		t.Errorf("systemd export treats an unrestricting write rule as a restriction:\n%s", buf.String())
	}
}

func TestOCITable(t *testing.T) {
	p := loadFixture(t, "rules.yaml")
	s := exportOCI(t, p)
	v := func(name string) uint64 { return mustValue(t, name) }
	for _, tc := range []struct {
		name string
		call string
		args [6]uint64
		want verdict
	}{
		{"tcp socket", "socket", [6]uint64{v("AF_INET"), v("SOCK_STREAM") | v("SOCK_CLOEXEC"), 6}, verdict{allow: true}},
		{"netlink socket", "socket", [6]uint64{v("AF_NETLINK"), v("SOCK_DGRAM"), 0}, verdict{errno: 97}},
		{"raw socket", "socket", [6]uint64{v("AF_INET"), v("SOCK_RAW"), 0}, verdict{errno: 22}},
		{"mptcp", "socket", [6]uint64{v("AF_INET"), v("SOCK_STREAM"), v("IPPROTO_MPTCP")}, verdict{errno: 1}},
		{"unknown socket type flag", "socket", [6]uint64{v("AF_INET"), v("SOCK_STREAM") | 0x100, 0}, verdict{errno: 1}},
		{"thread", "clone", [6]uint64{v("CLONE_VM") | v("CLONE_THREAD") | v("CLONE_SIGHAND")}, verdict{allow: true}},
		{"new user ns", "clone", [6]uint64{v("CLONE_NEWUSER") | v("SIGCHLD")}, verdict{errno: 1}},
		{"clone3", "clone3", [6]uint64{0, 88}, verdict{errno: 38}},
		{"tiocsti", "ioctl", [6]uint64{0, v("TIOCSTI")}, verdict{errno: 1}},
		{"tcgets", "ioctl", [6]uint64{0, v("TCGETS")}, verdict{allow: true}},
		{"fcntl denied", "fcntl", [6]uint64{3, 1033}, verdict{errno: 13}},
		{"fcntl denied, other", "fcntl", [6]uint64{3, 1034}, verdict{errno: 13}},
		{"fcntl high bits (the kernel reads an int)", "fcntl", [6]uint64{3, 1 | 1<<40}, verdict{allow: true}},
		{"tiocsti with bit 32", "ioctl", [6]uint64{0, 1<<32 | v("TIOCSTI")}, verdict{errno: 1}},
		{"tiocsti with high garbage", "ioctl", [6]uint64{0, 0xffffffff00000000 | v("TIOCSTI")}, verdict{errno: 1}},
		{"mptcp with bit 32", "socket", [6]uint64{v("AF_INET"), v("SOCK_STREAM"), 1<<32 | v("IPPROTO_MPTCP")}, verdict{errno: 1}},
		{"runc's fstatfs", "fstatfs", [6]uint64{3, 0}, verdict{allow: true}},
		{"fcntl getfd", "fcntl", [6]uint64{3, 1}, verdict{allow: true}},
		{"mmap rw", "mmap", [6]uint64{0, 4096, 3}, verdict{allow: true}},
		{"mmap wx", "mmap", [6]uint64{0, 4096, 6}, verdict{errno: 1}},
		{"personality query", "personality", [6]uint64{0xffffffff}, verdict{allow: true}},
		{"personality other", "personality", [6]uint64{v("ADDR_NO_RANDOMIZE")}, verdict{errno: 1}},
		{"prctl other", "prctl", [6]uint64{v("PR_SET_SECCOMP")}, verdict{errno: 22}},
		{"not allowed", "ptrace", [6]uint64{}, verdict{errno: 1}},
	} {
		if got := evalOCI(t, s, tc.call, tc.args); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %s%x = %+v, want %+v", tc.name, tc.call, tc.args, got, tc.want)
		}
	}
}

func TestOCIRulesGolden(t *testing.T) {
	p := loadFixture(t, "rules.yaml")
	var buf bytes.Buffer
	if err := Write(&buf, p, "oci", Options{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "rules.oci.golden.json", buf.Bytes())
}

func TestComplementBlocks(t *testing.T) {
	// Every value of a small mask is in exactly one of: the set, or one block.
	for _, set := range [][]uint64{{0}, {15}, {3}, {0, 15}, {1, 2, 9}, {}} {
		cs, err := complement(0, 0xf, set, false)
		if err != nil {
			t.Fatal(err)
		}
		for x := uint64(0); x < 64; x++ {
			n := 0
			for _, c := range cs {
				if x&c.Mask == c.Value {
					n++
				}
			}
			want := 1
			if slices.Contains(set, x&0xf) {
				want = 0
			}
			if n != want {
				t.Errorf("set %v, x %d: matched by %d blocks, want %d", set, x, n, want)
			}
		}
	}
	if _, err := complement(0, 0xf0, []uint64{0x10}, false); err == nil || !strings.Contains(err.Error(), "contiguous") {
		t.Errorf("a non-contiguous mask: got %v", err)
	}
}

// TestOCILoadsInLibseccomp hands the exports to libseccomp itself, rule by rule as runc does:
// it rejects what the JSON schema allows but the library does not (two comparisons of one
// argument: EINVAL; an errno rule beside an unconditional allow: EACCES; rule clashes after
// i386's socketcall rewrite: EEXIST).
func TestOCILoadsInLibseccomp(t *testing.T) {
	py := testutil.RequireTool(t, "python3")
	script := testutil.Testdata("export", "libseccomp_load.py")
	rules := loadFixture(t, "rules.yaml")
	compat := loadFixture(t, "rules.yaml")
	compat.Syscalls.Architectures = []string{"i386", "x32", "x86_64"}
	for name, p := range map[string]*policy.Profile{
		"cargo-build":        loadFixture(t, "cargo-build.yaml"),
		"rules":              rules,
		"rules-i386-and-x32": compat,
	} {
		var buf bytes.Buffer
		if err := Write(&buf, p, "oci", Options{}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, script, path).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 {
			testutil.RequireNoErr(t, "libseccomp", testutil.NotAvailable("%s", bytes.TrimSpace(out)))
		}
		if err != nil {
			t.Errorf("%s: libseccomp rejects the oci export: %v\n%s", name, err, out)
		}
	}
}

// exportedNames are the syscall names of an oci export's entries.
func exportedNames(s specs.LinuxSeccomp) []string {
	var out []string
	for _, sc := range s.Syscalls {
		out = append(out, sc.Names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Every name an export writes is one the consumer's own table knows: libseccomp's (runc, crun,
// the operator) through scmp_sys_resolver, systemd's through systemd-analyze. A profile with
// arm64's fstatat (go-seccomp-bpf's name for newfstatat) is the case that broke.
func TestExportedNamesKnownToConsumers(t *testing.T) {
	resolver := testutil.RequireTool(t, "scmp_sys_resolver")
	p := loadFixture(t, "cargo-build.yaml")
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "fstatat"}, policy.Syscall{Name: "newfstatat"})
	s := exportOCI(t, p)
	scArch := map[specs.Arch]string{specs.ArchX86_64: "x86_64", specs.ArchAARCH64: "aarch64", specs.ArchX86: "x86", specs.ArchX32: "x32"}
	for _, name := range exportedNames(s) {
		known := false
		for _, a := range s.Architectures {
			out, err := exec.Command(resolver, "-a", scArch[a], name).Output()
			if err != nil {
				t.Fatalf("scmp_sys_resolver %s: %v", name, err)
			}
			if strings.TrimSpace(string(out)) != "-1" {
				known = true
			}
		}
		if !known {
			t.Errorf("the oci export names %s, which libseccomp does not know on %v", name, s.Architectures)
		}
	}
	analyze := testutil.RequireTool(t, "systemd-analyze")
	out, err := exec.Command(analyze, "syscall-filter", "@known").Output()
	if err != nil {
		t.Fatalf("systemd-analyze syscall-filter: %v", err)
	}
	known := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.TrimSpace(l); f != "" && !strings.HasPrefix(f, "#") && !strings.HasPrefix(f, "@") {
			known[f] = true
		}
	}
	_, env := fakeHost(t)
	var buf bytes.Buffer
	if err := Write(&buf, p, "systemd", Options{Env: env}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "SystemCallFilter="); ok {
			for _, name := range strings.Fields(v) {
				if !known[name] {
					t.Errorf("the systemd export names %s, which systemd does not know", name)
				}
			}
		}
	}
}

// TestCompatRulesPerABI is issue 23's "export formats apply rules by name across ABIs": the
// formats that name syscalls for every listed architecture (oci, spo) gave an i386 profile
// x86_64's mmap check on i386's old mmap, whose registers hold no prot (its arguments are in
// memory): any garbage there passed, where sysprof enforce refuses every such call (its raw
// BPF maps rules per ABI by number). Such an ABI is left out (its calls meet the default
// action) and a note says why; once a rule lets PROT_EXEC through, the rules agree and it stays.
func TestCompatRulesPerABI(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	p.Syscalls.Architectures = []string{"i386", "x86_64"}
	for _, format := range []string{"oci", "spo"} {
		var buf bytes.Buffer
		if err := Write(&buf, p, format, Options{}); err != nil {
			t.Fatal(err)
		}
		notes, err := Notes(p, format, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "SCMP_ARCH_X86\"") || strings.Contains(buf.String(), "- SCMP_ARCH_X86\n") {
			t.Errorf("%s: i386 is listed, with x86_64's mmap rule on its old mmap:\n%s", format, buf.String())
		}
		if !strings.Contains(strings.Join(notes, "\n"), "left out: the i386 ABI") {
			t.Errorf("%s: no note says i386 is left out: %q", format, notes)
		}
		if format == "oci" {
			checkGolden(t, "cargo-build-i386.oci.golden.json", buf.Bytes())
		}
	}
	p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "mmap", Arg: 2, Flags: []string{"PROT_READ", "PROT_WRITE", "PROT_EXEC"}})
	if s := exportOCI(t, p); !slices.Contains(s.Architectures, specs.ArchX86) {
		t.Errorf("with PROT_EXEC allowed on mmap the rules agree, yet i386 is left out: %v", s.Architectures)
	}
}

package audit

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// Class is the verdict on a finding.
type Class string

// Classes, in the order a reviewer should read them.
const (
	Suspicious Class = "suspicious"
	Overbroad  Class = "overbroad"
	Legitimate Class = "legitimate"
)

// Classes lists the classes, most urgent first.
var Classes = []Class{Suspicious, Overbroad, Legitimate}

func (c Class) rank() int { return slices.Index(Classes, c) }

// Action is what to do about a finding of the class.
func (c Class) Action() string {
	switch c {
	case Suspicious:
		return "investigate: keep it denied; find who changed the binary or the project (hash, commit) on the hosts listed"
	case Overbroad:
		return "tighten the tool's role: keep it denied and configure or pin the tool so it stops (or set role: in sysprof.yaml if the role is wrong)"
	default:
		return "refine: accept it into the profile (sysprof refine --from REPORT --only ITEM, or learn the step again)"
	}
}

// Subject is what Classify judges: one escape (what, by which binary) and the context it was
// seen in (the step's role, the hosts its profile already names).
type Subject struct {
	Kind, Access, Target, Host, Proto string
	What, Change                      string
	Exe                               string
	Parents                           []string
	Role                              string
	Risk                              policy.Risk
	KnownHosts                        []string
	// Dangerous: the run's changeset classified the write dangerous (a set-id file, a link
	// leaving its tree, a protected path, a new executable outside the outputs).
	Dangerous bool
}

// Classify is the one decision on an escape: legitimate, overbroad or suspicious, with the
// reason. It is pure: the same subject always gets the same verdict. Suspicious patterns are
// checked first (whatever the role), then what the role does not explain, then what it does.
func Classify(s Subject) (Class, string) {
	target := s.Target
	write := s.Access == "write" || s.Access == "create" || s.Access == "delete"

	// Suspicious, whatever the role.
	if s.Dangerous {
		return Suspicious, "the run's changeset held it as dangerous: " + s.What
	}
	if s.Kind == KindFile && write {
		if p := policy.ProtectedPath(target); p != "" {
			if s.Role == RoleVCS && p == "$WORKDIR/.git" && !gitExecutes(target) {
				return Legitimate, "git writes its own repository (" + target + ")"
			}
			return Suspicious, "writes protected path " + p + ": what is written there runs outside the sandbox later"
		}
		if covered(target, loaderFiles) {
			return Suspicious, "loader trick: writes " + target + " (preloads code into every program)"
		}
	}
	if s.Kind == KindFile && !write && s.Access != "exec" {
		if c := paths.CredentialStore(target); c != "" {
			return Suspicious, "secret read: credential store " + c
		}
		if r, why := policy.PathRisk("read", target, nil); r == policy.RiskCritical && target != "" {
			return Suspicious, "secret read: " + why
		}
	}
	if strings.Contains(s.What, "credential store") {
		return Suspicious, "secret read: " + s.What
	}
	if strings.Contains(strings.ToLower(s.What+" "+s.Change), "stand-in") {
		return Suspicious, "a stand-in credential went to a destination it was not issued for"
	}
	if s.Kind == KindNetwork {
		if a, err := policy.ParseEndpoint(target); err == nil && a.IsIP() {
			addr := a.Prefix.Addr()
			switch {
			case addr.IsLinkLocalUnicast():
				return Suspicious, "raw link-local address " + target + ": the cloud metadata service hands out credentials"
			case a.IsLoopback():
				// A test's own servers live in the sandbox's network namespace and were
				// learned: a loopback connect that escapes reaches for a host service.
				return Suspicious, "raw loopback address " + target + ": a service on the host, outside the sandbox"
			default:
				return Suspicious, "raw address " + target + ": no registry or mirror is reached by a bare IP"
			}
		}
	}
	if s.Kind == KindFile && s.Access == "exec" {
		if loaderBinary(target) {
			return Suspicious, "loader trick: runs the dynamic loader directly (" + target + ")"
		}
		if covered(target, scratchDirs) && s.Role != RoleBuild && s.Role != RoleTest {
			return Suspicious, "exec of a written file: " + target + " is in a scratch directory only the run writes"
		}
	}
	if s.Kind == KindSyscall {
		if why, ok := loaderSyscalls[target]; ok {
			return Suspicious, "loader trick: " + target + " (" + why + ")"
		}
		if r, why := policy.SyscallRisk(target); r == policy.RiskCritical {
			return Suspicious, "privileged syscall " + target + ": " + why
		}
		if s.Risk == policy.RiskCritical {
			return Suspicious, "critical syscall argument: " + strings.TrimSpace(s.What)
		}
	}

	quiet := s.Role == RoleFormat || s.Role == RoleLint
	noun := map[string]string{RoleFormat: "formatter", RoleLint: "linter", RoleLanguageServer: "language server", RoleVCS: "version control tool"}[s.Role]
	if quiet && s.Kind == KindFile && write && !covered(target, []string{"$WORKDIR"}) && !cacheOrTemp(target) && !harmlessDevice(target) {
		return Suspicious, fmt.Sprintf("a %s writes outside the project (%s): it edits a tree that is not its own", noun, target)
	}

	// What the role does not explain.
	if sdk := cloudSDK(target); sdk != "" && s.Kind == KindFile && s.Role != RoleBuild && s.Role != RoleInstall && s.Role != RoleTest && s.Role != RoleOther {
		return Overbroad, fmt.Sprintf("a %s loads a cloud SDK (%s)", noun, sdk)
	}
	if quiet && s.Kind == KindNetwork {
		return Overbroad, fmt.Sprintf("a %s connects out (%s): its role needs no network", noun, nameOf(s))
	}
	if quiet && s.Kind == KindFile && s.Access == "exec" && shells[path.Base(target)] {
		return Overbroad, fmt.Sprintf("a %s spawns a shell (%s)", noun, target)
	}

	// What is legitimate.
	switch {
	case s.Kind == KindBinary:
		return Legitimate, "a new version of a binary the profile knows (" + target + ")"
	case s.Kind == KindFile && cacheOrTemp(target):
		return Legitimate, "a cache or temp location of the tool (" + target + ")"
	case s.Kind == KindNetwork:
		if h := sameEcosystem(hostOf(s), s.KnownHosts); h != "" {
			return Legitimate, "a new host of the same ecosystem as " + h + " (a registry mirror)"
		}
	}
	if quiet && s.Kind == KindFile && !write && !covered(target, []string{"$WORKDIR"}) && !systemPath(target) {
		return Overbroad, fmt.Sprintf("a %s reads outside the project (%s)", noun, target)
	}
	if why := roleDoes(s, write); why != "" {
		return Legitimate, why
	}
	if s.Risk <= policy.RiskLow {
		return Legitimate, "low risk (" + s.Risk.String() + ") and within what a " + roleName(s.Role) + " may do"
	}
	return Overbroad, "not explained by the " + roleName(s.Role) + " role (" + s.Risk.String() + " risk)"
}

// roleDoes says why the role normally does this, or "".
func roleDoes(s Subject, write bool) string {
	namedOut := false
	if s.Kind == KindNetwork {
		if a, err := policy.ParseEndpoint(s.Target); err == nil && !a.IsUnix() && !a.IsIP() {
			namedOut = slices.Contains([]int{443, 80, 22, 9418}, a.Port)
		} else if err != nil && s.Host != "" {
			namedOut = true
		}
	}
	inWork := covered(s.Target, []string{"$WORKDIR"})
	switch s.Role {
	case RoleInstall:
		if namedOut {
			return "an installer fetches packages from a named host (" + nameOf(s) + ")"
		}
		if s.Kind == KindFile && inWork {
			return "an installer writes the project's dependencies (" + s.Target + ")"
		}
	case RoleBuild, RoleTest:
		if namedOut {
			return "a build fetches its dependencies from a named host (" + nameOf(s) + ")"
		}
		if s.Kind == KindFile && (inWork || covered(s.Target, scratchDirs)) {
			return "a build or test writes and runs its outputs (" + s.Target + ")"
		}
	case RoleLanguageServer:
		if namedOut {
			return "a language server fetches modules and its own updates (" + nameOf(s) + ")"
		}
		if s.Kind == KindFile && !write {
			return "a language server reads sources and toolchains (" + s.Target + ")"
		}
	case RoleVCS:
		if namedOut {
			return "version control talks to its remote (" + nameOf(s) + ")"
		}
	case RoleFormat, RoleLint:
		if s.Kind == KindFile && inWork {
			return "a formatter or linter reads and rewrites the project's files (" + s.Target + ")"
		}
	}
	if s.Kind == KindFile && s.Access == "exec" && systemPath(s.Target) {
		return "runs a system program (" + s.Target + ")"
	}
	if s.Kind == KindFile && !write && systemPath(s.Target) {
		return "system files every program may read (" + s.Target + ")"
	}
	return ""
}

func roleName(r string) string {
	if r == "" {
		return RoleOther
	}
	return r
}

// nameOf is the DNS name of a network escape when known, else its endpoint.
func nameOf(s Subject) string {
	if s.Host != "" {
		return s.Host
	}
	return s.Target
}

func hostOf(s Subject) string {
	if s.Host != "" {
		return strings.ToLower(s.Host)
	}
	if a, err := policy.ParseEndpoint(s.Target); err == nil {
		return strings.ToLower(a.Host)
	}
	return ""
}

// sameEcosystem returns the known host that host is a mirror or sibling of: the same
// registrable domain (the last two labels: pkgs.example.org and mirror.example.org), or the
// same service label in another domain (registry.example.org and registry.example.net). "".
func sameEcosystem(host string, known []string) string {
	if host == "" {
		return ""
	}
	hl := strings.Split(host, ".")
	for _, k := range known {
		kh := k
		if a, err := policy.ParseEndpoint(k); err == nil && a.Host != "" {
			kh = a.Host
		}
		kh = strings.ToLower(kh)
		if kh == host {
			continue
		}
		kl := strings.Split(kh, ".")
		if len(hl) >= 2 && len(kl) >= 2 && hl[len(hl)-1] == kl[len(kl)-1] && hl[len(hl)-2] == kl[len(kl)-2] {
			return kh
		}
		if len(hl) >= 3 && len(kl) >= 3 && hl[0] == kl[0] && len(hl[0]) > 2 {
			return kh
		}
	}
	return ""
}

func covered(p string, roots []string) bool {
	for _, r := range roots {
		if paths.Covers(r, p) {
			return true
		}
	}
	return false
}

// scratchDirs are written by the run itself: an exec from there runs something the run wrote.
var scratchDirs = []string{"$TMPDIR", "/tmp", "/var/tmp", "/dev/shm", "/run/user"}

// loaderFiles make the dynamic loader run code in every program.
var loaderFiles = []string{"/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.cache"}

// loaderSyscalls run code that no file on disk holds, or in another process.
var loaderSyscalls = map[string]string{
	"memfd_create":      "code in an anonymous file",
	"execveat":          "runs a file by descriptor (a memfd)",
	"ptrace":            "controls another process",
	"process_vm_writev": "writes another process's memory",
	"process_vm_readv":  "reads another process's memory",
}

func loaderBinary(p string) bool {
	b := path.Base(p)
	return strings.HasPrefix(b, "ld-linux") || b == "ld.so" || strings.HasPrefix(b, "ld64.so")
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "csh": true, "tcsh": true, "busybox": true}

// cloudSDK names the cloud SDK a path belongs to, or "".
func cloudSDK(p string) string {
	l := strings.ToLower(p)
	for _, sdk := range []string{"@aws-sdk", "aws-sdk", "botocore", "boto3", "@google-cloud", "google-cloud", "googleapis", "@azure", "azure-sdk", "azure-storage", "aliyun-sdk", "oci-sdk"} {
		if strings.Contains(l, "/"+sdk) {
			return sdk
		}
	}
	return ""
}

// cacheOrTemp: a tool cache or package store (a path variable of that role), the user's cache
// directory, or temp.
func cacheOrTemp(p string) bool {
	if name, _, ok := paths.Split(p); ok {
		for _, v := range paths.Vars() {
			if v.Name == name && (v.Role == paths.RoleCache || v.Role == paths.RoleTemp) {
				return true
			}
		}
	}
	return covered(p, cacheDirs())
}

// cacheDirs are the user's cache and temp directories, and the home defaults of the cache
// variables ($HOME/.npm for $NPM_CACHE): a report may name a cache by either.
var cacheDirs = sync.OnceValue(func() []string {
	out := []string{"$HOME/.cache", "$HOME/go/pkg", "/tmp", "/var/tmp", "/var/cache"}
	for _, v := range paths.Vars() {
		if (v.Role == paths.RoleCache || v.Role == paths.RoleTemp) && strings.HasPrefix(v.Default, "$HOME/") && !strings.Contains(v.Default, " ") {
			out = append(out, v.Default)
		}
	}
	return out
})

// systemPath: the read-only system trees (policy rates reading there low).
func systemPath(p string) bool {
	if r, _ := policy.PathRisk("read", p, nil); r > policy.RiskLow {
		return false
	}
	return covered(p, []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev", "/nix/store", "$GOROOT", "$RUSTUP_HOME"})
}

func harmlessDevice(p string) bool {
	return covered(p, []string{"/dev/null", "/dev/tty", "/dev/pts", "/dev/shm", "/dev/zero", "/dev/full"})
}

// gitExecutes: the parts of a repository git runs or obeys (hooks, config with its fsmonitor
// and aliases, info/attributes filters).
func gitExecutes(p string) bool {
	return covered(p, []string{"$WORKDIR/.git/hooks", "$WORKDIR/.git/config", "$WORKDIR/.git/info"})
}

package policy

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/paths"
)

// pathVariables lists the prefixes a portable path may start with (paths.Names), for messages.
func pathVariables() string { return "$" + strings.Join(paths.Names(), " $") }

// Architectures are the architecture names a profile may list, with the syscall tables their
// names are checked against.
var Architectures = []string{"x86_64", "i386", "x32", "aarch64", "arm"}

var archTables = []*arch.Info{arch.X86_64, arch.I386, arch.X32, arch.AARCH64, arch.ARM}

// IsSyscall reports whether name is a syscall on at least one supported architecture.
func IsSyscall(name string) bool {
	for _, a := range archTables {
		if _, ok := a.SyscallNames[name]; ok {
			return true
		}
	}
	return false
}

// Validate checks the semantic rules Parse applies beyond the schema (syscall names, constants,
// paths, endpoints) on a profile built in memory. Errors are *LoadError with Field set and no
// line. Save calls it so that sysprof never writes a file it cannot load.
func Validate(p *Profile) error {
	if p.APIVersion != "" && !slices.Contains(SupportedAPIVersions, p.APIVersion) {
		return &LoadError{Field: "apiVersion", Msg: fmt.Sprintf("%q is not a profile version this sysprof writes (%s)", p.APIVersion, strings.Join(SupportedAPIVersions, ", "))}
	}
	if p.Kind != "" && p.Kind != Kind {
		return &LoadError{Field: "kind", Msg: fmt.Sprintf("%q is not a profile; want %s", p.Kind, Kind)}
	}
	if errs := check(p); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// check returns the semantic errors of p in file order.
func check(p *Profile) []*LoadError {
	var errs []*LoadError
	add := func(field, format string, args ...any) {
		errs = append(errs, &LoadError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	m := p.Metadata
	for _, f := range []struct{ name, v string }{{"created", m.Created}, {"updated", m.Updated}} {
		if f.v == "" {
			continue
		}
		if _, err := time.Parse(time.RFC3339, f.v); err != nil {
			add("metadata."+f.name, "%q is not an RFC 3339 time (2006-01-02T15:04:05Z)", f.v)
		}
	}
	if m.Runs < 0 {
		add("metadata.runs", "must be at least 0")
	}
	for i, a := range p.Syscalls.Architectures {
		if !slices.Contains(Architectures, a) {
			add(fmt.Sprintf("syscalls.architectures[%d]", i), "%q is not a supported architecture (%s)", a, strings.Join(Architectures, ", "))
		}
	}
	for i, s := range p.Syscalls.Allow {
		f := fmt.Sprintf("syscalls.allow[%d]", i)
		if msg := syscallProblem(s.Name); msg != "" {
			add(f+".name", "%s", msg)
		}
		if s.Seen < 0 {
			add(f+".seen", "must be at least 0")
		}
	}
	for i, r := range p.Syscalls.Args {
		f := fmt.Sprintf("syscalls.args[%d]", i)
		if msg := syscallProblem(r.Syscall); msg != "" {
			add(f+".syscall", "%s", msg)
		}
		if r.Arg < 0 || r.Arg > 5 {
			add(f+".arg", "argument index must be 0..5, not %d", r.Arg)
		}
		want := ArgKind(r.Syscall, r.Arg)
		if r.Mask != "" {
			if _, err := ParseValue(r.Mask); err != nil {
				add(f+".mask", "%v", err)
			}
		}
		for _, l := range []struct {
			name string
			vals []string
		}{{"values", r.Values}, {"flags", r.Flags}, {"deny", r.Deny}} {
			for j, v := range l.vals {
				vf := fmt.Sprintf("%s.%s[%d]", f, l.name, j)
				if msg := valueProblem(v, want, r.Syscall, r.Arg); msg != "" {
					add(vf, "%s", msg)
				}
			}
		}
		if r.Errno != "" && SymbolKind(r.Errno) != KindErrno {
			add(f+".errno", "%q is not an errno sysprof knows (EPERM, EACCES, ENOSYS, EAFNOSUPPORT, ...)", r.Errno)
		}
	}
	fs := p.Filesystem
	for _, l := range []struct {
		name  string
		rules []PathRule
	}{{"read", fs.Read}, {"write", fs.Write}, {"exec", fs.Exec}, {"list", fs.List}, {"hidden", fs.Hidden}} {
		for i, r := range l.rules {
			if msg := pathProblem(r.Path); msg != "" {
				add(fmt.Sprintf("filesystem.%s[%d].path", l.name, i), "%s", msg)
			}
		}
	}
	for _, l := range []struct {
		name string
		eps  []Endpoint
	}{{"connect", p.Network.Connect}, {"send", p.Network.Send}, {"bind", p.Network.Bind}} {
		for i, e := range l.eps {
			f := fmt.Sprintf("network.%s[%d]", l.name, i)
			a, err := ParseEndpoint(e.Endpoint)
			if err != nil {
				add(f+".endpoint", "%v", err)
				continue
			}
			if a.Port == 0 && !a.IsUnix() && l.name != "bind" {
				add(f+".endpoint", "%q: port 0 only means \"any ephemeral port\" in bind rules", e.Endpoint)
			}
			switch {
			case a.IsUnix() && e.Proto != "":
				add(f+".proto", "unix socket endpoints take no proto (got %q)", e.Proto)
			case !a.IsUnix() && !slices.Contains([]string{"tcp", "udp", "mptcp"}, e.Proto):
				add(f+".proto", "want tcp, udp or mptcp for %q (got %q)", e.Endpoint, e.Proto)
			}
		}
	}
	for i, e := range p.Network.Resolve {
		if a, err := ParseEndpoint(e.Endpoint + ":1"); err != nil || a.Host == "" || e.Proto != "" {
			add(fmt.Sprintf("network.resolve[%d].endpoint", i), "%q: want a DNS name without port or proto (a name looked up, never connected to)", e.Endpoint)
		}
	}
	for i, n := range p.Env.Pass {
		if msg := envNameProblem(n); msg != "" {
			add(fmt.Sprintf("env.pass[%d]", i), "%s", msg)
		}
	}
	checkCredentials(p.Credentials, add)
	for i, b := range p.Binaries {
		f := fmt.Sprintf("binaries[%d]", i)
		if msg := pathProblem(b.Path); msg != "" {
			add(f+".path", "%s", msg)
		}
		if b.SHA256 != "" && !isSHA256(b.SHA256) {
			add(f+".sha256", "%q is not a sha256 (64 lowercase hex digits)", b.SHA256)
		}
	}
	return errs
}

func syscallProblem(name string) string {
	if IsSyscall(name) {
		return ""
	}
	msg := fmt.Sprintf("%q is not a syscall on any supported architecture", name)
	if s := closestSyscall(name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func valueProblem(v, want, syscall string, arg int) string {
	if _, err := ParseValue(v); err != nil {
		return err.Error()
	}
	if want == "" {
		return ""
	}
	for part := range strings.SplitSeq(v, "|") {
		part = strings.TrimSpace(part)
		got := SymbolKind(part)
		if got == "" || got == want || want == KindClone && got == KindSignal {
			continue // numbers, right kind, or clone's exit signal (SIGCHLD)
		}
		return fmt.Sprintf("%s is a %s constant, but argument %d of %s takes %s constants", part, got, arg, syscall, want)
	}
	return ""
}

// pathProblem says what is wrong with a path rule, or "".
func pathProblem(p string) string {
	if p == "" {
		return "empty path"
	}
	if !paths.Known(p) {
		return fmt.Sprintf("%q must be absolute or start with a variable (%s)", p, pathVariables())
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Sprintf("%q contains a NUL byte", p)
	}
	if path.Clean(p) != p {
		return fmt.Sprintf("%q is not clean: write %q (no //, ., .. or trailing /)", p, path.Clean(p))
	}
	for c := range strings.SplitSeq(p, "/") {
		if _, err := path.Match(c, ""); err != nil {
			return fmt.Sprintf("%q has a malformed glob in %q", p, c)
		}
	}
	return ""
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// EndpointAddr is a parsed network endpoint.
type EndpointAddr struct {
	// Unix is the socket path (or @name for an abstract socket) of a unix: endpoint.
	Unix string
	// Host is the DNS name of a host:port endpoint.
	Host string
	// Prefix is the address of an IP or CIDR endpoint; a single address is a /32 or /128.
	Prefix netip.Prefix
	Port   int
}

// IsUnix reports whether the endpoint is a unix socket.
func (a EndpointAddr) IsUnix() bool { return a.Unix != "" }

// IsIP reports whether the endpoint is an IP address or CIDR rather than a name.
func (a EndpointAddr) IsIP() bool { return a.Prefix.IsValid() }

// IsLoopback reports whether every address the endpoint covers is loopback (127.0.0.0/8,
// ::1, or the name localhost).
func (a EndpointAddr) IsLoopback() bool {
	if a.Host == "localhost" {
		return true
	}
	if !a.Prefix.IsValid() {
		return false
	}
	addr := a.Prefix.Masked().Addr()
	if addr.Is4() {
		return a.Prefix.Bits() >= 8 && addr.IsLoopback()
	}
	return a.Prefix.Bits() == 128 && addr.IsLoopback()
}

// ParseEndpoint parses host:port, CIDR:port, [v6]:port, [v6/len]:port, unix:/path (or
// unix:$VAR/path) and unix:@abstract.
func ParseEndpoint(s string) (EndpointAddr, error) {
	if rest, ok := strings.CutPrefix(s, "unix:"); ok {
		switch {
		case strings.HasPrefix(rest, "@"):
			if len(rest) == 1 {
				return EndpointAddr{}, fmt.Errorf("%q: abstract socket without a name", s)
			}
			return EndpointAddr{Unix: rest}, nil
		default:
			if msg := pathProblem(rest); msg != "" {
				return EndpointAddr{}, fmt.Errorf("unix socket: %s", msg)
			}
			return EndpointAddr{Unix: rest}, nil
		}
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return EndpointAddr{}, fmt.Errorf("%q has no port: want host:port, CIDR:port, [v6]:port or unix:/path", s)
	}
	host, portStr := s[:i], s[i+1:]
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 || portStr != strconv.Itoa(port) {
		return EndpointAddr{}, fmt.Errorf("%q: port %q is not a number 0..65535", s, portStr)
	}
	a := EndpointAddr{Port: port}
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return EndpointAddr{}, fmt.Errorf("%q: unbalanced [", s)
		}
		inner := host[1 : len(host)-1]
		pfx, err := parsePrefix(inner)
		if err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() {
			return EndpointAddr{}, fmt.Errorf("%q: %q is not an IPv6 address or prefix", s, inner)
		}
		if pfx.Masked() != pfx {
			return EndpointAddr{}, fmt.Errorf("%q: prefix has host bits set; did you mean [%s]:%d?", s, pfx.Masked(), port)
		}
		a.Prefix = pfx
		return a, nil
	}
	if strings.Contains(host, ":") {
		return EndpointAddr{}, fmt.Errorf("%q: IPv6 addresses need brackets: [%s]:%s", s, host, portStr)
	}
	if pfx, err := parsePrefix(host); err == nil {
		if !pfx.Addr().Is4() {
			return EndpointAddr{}, fmt.Errorf("%q: %q is not an IPv4 address", s, host)
		}
		if pfx.Masked() != pfx {
			return EndpointAddr{}, fmt.Errorf("%q: prefix has host bits set; did you mean %s:%d?", s, pfx.Masked(), port)
		}
		a.Prefix = pfx
		return a, nil
	}
	if !isHostname(host) {
		return EndpointAddr{}, fmt.Errorf("%q: %q is not a host name, IPv4 address or CIDR", s, host)
	}
	a.Host = strings.ToLower(host)
	return a, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if addr.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("zones are not supported")
	}
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// isHostname checks RFC 1123 syntax; the last label may not be all digits (that is a broken
// IP address, not a name).
func isHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != ""
}

// closestSyscall suggests a known syscall within edit distance 2, or "".
func closestSyscall(name string) string {
	if len(name) > 40 {
		return ""
	}
	best, bestD := "", 3
	seen := map[string]bool{}
	for _, a := range archTables {
		for s := range a.SyscallNames {
			if seen[s] {
				continue
			}
			seen[s] = true
			if d := editDistance(name, s); d < bestD || d == bestD && s < best {
				best, bestD = s, d
			}
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (bytes), for did-you-mean suggestions.
func EditDistance(a, b string) int { return editDistance(a, b) }

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

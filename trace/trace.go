// Package trace defines Trace, the raw record of one learn run: what a command's whole process
// tree was seen doing, exactly as observed. It is plain data (JSON on disk) shared by the profiler,
// which fills it, and the synthesizer, which turns it into a policy. It does no I/O besides
// reading and writing its own file.
package trace

import "time"

// Version is the trace file format version; bump it when a field changes meaning.
const Version = 1

// Access kinds of a file observation.
const (
	AccessRead     = "read"
	AccessWrite    = "write"
	AccessCreate   = "create"
	AccessDelete   = "delete"
	AccessExec     = "exec"
	AccessList     = "list"
	AccessMetadata = "metadata"
	// AccessMap: the file was mapped executable (mmap PROT_EXEC): code the command runs
	// without an exec (a library), recorded only outside the system trees.
	AccessMap = "map"
)

// Accesses lists the access kinds, in the order summaries show them.
var Accesses = []string{AccessRead, AccessWrite, AccessCreate, AccessDelete, AccessExec, AccessList, AccessMetadata, AccessMap}

// Architectures a syscall can be made through. On amd64 a 64-bit process can still enter the
// kernel through the i386 compat entry (int 0x80) or with the x32 bit set.
const (
	ArchX86_64  = "x86_64"
	ArchI386    = "i386"
	ArchX32     = "x32"
	ArchAArch64 = "aarch64"
	ArchARM     = "arm"
)

// Network operations.
const (
	OpConnect = "connect"
	OpSend    = "send"
	OpBind    = "bind"
)

// Trace is everything one learn run observed.
type Trace struct {
	Version int      `json:"version"`
	Command []string `json:"command"`
	// Context holds the machine-specific values synthesis turns into portable variables:
	// the path variables of package paths (WORKDIR, HOME, TMPDIR, GOPATH, NPM_CACHE, ...) as
	// paths.Host found them for the command, and USER.
	Context map[string]string `json:"context"`

	Host     Host      `json:"host"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	ExitCode int       `json:"exit_code"`

	Processes []Process       `json:"processes"`
	Syscalls  []SyscallCount  `json:"syscalls"`
	Args      []ArgValue      `json:"args,omitempty"`
	Files     []FileAccess    `json:"files,omitempty"`
	Network   []NetworkAccess `json:"network,omitempty"`
	DNS       []DNSAnswer     `json:"dns,omitempty"`

	Loss Loss `json:"loss"`
	// Peaks are the most the run's cgroup held at once (zero: not measured).
	Peaks Peaks `json:"peaks,omitzero"`
	// Incomplete is true when the trace may not hold everything the command did: events were
	// lost, the run was interrupted, or a process was still alive when recording stopped.
	Incomplete bool     `json:"incomplete"`
	Reasons    []string `json:"incomplete_reasons,omitempty"`
}

// Peaks are what the whole process tree held at most at once: tasks (processes and threads)
// and memory in bytes (its cgroup's pids.peak, memory.peak), and bytes in its temporary
// directory (Tmp; 0: not measured). Written and WrittenFiles are what the run's writes in its
// work tree left when it ended: bytes allocated and files, directories and links (what an
// enforced run's changeset holds; 0: not measured).
type Peaks struct {
	Pids         int   `json:"pids,omitempty"`
	Memory       int64 `json:"memory,omitempty"`
	Tmp          int64 `json:"tmp,omitempty"`
	Written      int64 `json:"written,omitempty"`
	WrittenFiles int64 `json:"writtenFiles,omitempty"`
	// WritesMeasured: Written and WrittenFiles were measured (zero: the run wrote nothing).
	WritesMeasured bool `json:"writesMeasured,omitempty"`
}

// Host describes the machine the trace was recorded on.
type Host struct {
	Kernel   string `json:"kernel"`
	Arch     string `json:"arch"` // native syscall arch, e.g. x86_64
	Hostname string `json:"hostname,omitempty"`
}

// Process is one exec'd program instance in the tree (a process that execs twice appears twice,
// the second with Parent set to the first's ID).
type Process struct {
	ID     int    `json:"id"`     // unique within the trace
	Parent int    `json:"parent"` // ID of the process that forked or exec'd it; 0 for the root
	PID    int    `json:"pid"`
	Exe    string `json:"exe"` // absolute, resolved path of the executable
	Argv0  string `json:"argv0,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // of the binary, computed in user space
	// ExecOf is true when this entry replaced its parent's image (exec chain), false when it is
	// a forked child that then exec'd.
	ExecOf   bool      `json:"exec_of,omitempty"`
	Start    time.Time `json:"start"`
	ExitCode *int      `json:"exit_code,omitempty"` // nil if not seen exiting
	Signal   int       `json:"signal,omitempty"`    // terminating signal, if any
}

// SyscallCount is how often one executable made one syscall through one architecture entry.
type SyscallCount struct {
	Exe   string `json:"exe"`
	Arch  string `json:"arch"`
	Name  string `json:"name"` // "syscall_<nr>" when the number has no name in that arch's table
	Nr    int    `json:"nr"`
	Count uint64 `json:"count"`
}

// ArgValue is one observed value of a risk-deciding syscall argument.
// Kind names what Value means: "socket" (Value = domain<<32|type<<16... see Fields), "clone_flags",
// "clone3_flags", "unshare_flags", "setns_nstype", "prctl_option", "personality",
// "ioctl_request", "mmap_prot", "mprotect_prot", ArgMemfdExec.
type ArgValue struct {
	Exe     string `json:"exe"`
	Syscall string `json:"syscall"`
	Kind    string `json:"kind"`
	Value   uint64 `json:"value"`
	// Fields holds decoded parts where one value is not enough (socket: domain, type, protocol).
	Fields map[string]uint64 `json:"fields,omitempty"`
	Count  uint64            `json:"count"`
}

// ArgMemfdExec is the kind of the ArgValue that says Exe executed or mapped executable a memfd
// (Syscall "memfd_create", Value MFD_EXEC): enforce lets memfds be executable only then.
const ArgMemfdExec = "memfd_exec"

// FileAccess is one path accessed by one executable in one way.
type FileAccess struct {
	Exe    string `json:"exe"`
	Path   string `json:"path"` // absolute, cleaned; symlinks resolved where the kernel resolved them
	Access string `json:"access"`
	OK     bool   `json:"ok"`              // false: the call failed (e.g. a probe for a missing file)
	Errno  int    `json:"errno,omitempty"` // when !OK
	Dir    bool   `json:"dir,omitempty"`   // the path is a directory
	// Count is approximate: the number of events that reached user space, which the kernel
	// deduplicates (one per executable, access, result and file), not the number of calls.
	Count uint64 `json:"count"`
}

// NetworkAccess is one endpoint an executable connected to, sent to or bound.
type NetworkAccess struct {
	Exe    string `json:"exe"`
	Op     string `json:"op"`
	Family string `json:"family"` // inet, inet6, unix
	Proto  string `json:"proto"`  // tcp, udp, mptcp, raw, stream, dgram, seqpacket
	Addr   string `json:"addr,omitempty"`
	Port   int    `json:"port,omitempty"`
	// Path is the unix socket path; abstract names start with "@".
	Path string `json:"path,omitempty"`
	Host string `json:"host,omitempty"` // DNS name that resolved to Addr during the run
	// OK is false when the call failed; inet operations are recorded when attempted (the
	// cgroup hooks run before the outcome is known), so for them it is always true.
	OK bool `json:"ok"`
	// Count is approximate, like FileAccess.Count: deduplicated events, not calls.
	Count uint64 `json:"count"`
}

// DNSAnswer ties a looked-up name to the addresses that came back.
type DNSAnswer struct {
	Name  string   `json:"name"`
	Addrs []string `json:"addrs,omitempty"`
	// Server is the resolver the query went to (addr:port).
	Server string `json:"server,omitempty"`
}

// Loss counts what the kernel side could not deliver.
type Loss struct {
	RingbufDrops uint64 `json:"ringbuf_drops"` // events the kernel side dropped (ring buffer full, an exit program skipped)
	MapFull      uint64 `json:"map_full"`      // in-kernel aggregation maps that ran out of room
}

// Any reports whether anything was lost.
func (l Loss) Any() bool { return l.RingbufDrops > 0 || l.MapFull > 0 }

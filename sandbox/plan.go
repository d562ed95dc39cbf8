package sandbox

// Plan is what the init stage applies, in this order: mounts, network, Landlock, capabilities.
// Every field uses absolute, already-expanded host paths.
type Plan struct {
	// Mounts. The init stage runs in a fresh mount namespace (and user namespace when not root).
	ReadOnlyRoot bool     `json:"read_only_root"`
	Writable     []string `json:"writable,omitempty"`  // stay writable under the read-only root
	Hidden       []string `json:"hidden,omitempty"`    // made empty/absent (tmpfs on dirs, empty file on files)
	PrivateTmp   bool     `json:"private_tmp"`         // fresh tmpfs on /tmp (and /var/tmp)
	TmpSize      int64    `json:"tmp_size,omitempty"`  // bytes each private tmpfs may hold (0: the kernel's default)
	TmpFiles     int64    `json:"tmp_files,omitempty"` // inodes each private tmpfs may hold (0: the kernel's default)
	// Masked files are covered by a read-only copy with other content (a .git/config without
	// its credentials): the tool needs the rest of the file.
	Masked []Masked `json:"masked,omitempty"`
	// Staged directories are overlays whose writes the enforcer copies back selectively (see
	// Stage); applied before the writable paths below them.
	Staged []Stage `json:"staged,omitempty"`
	// ReadOnly paths inside writable trees (a protected path such as $WORKDIR/.git) are covered
	// with a read-only bind of themselves.
	ReadOnly []string `json:"read_only,omitempty"`
	// NoExec lists writable mounts (writable paths, stages, private tmp dirs) in which no exec
	// was learned: mounted noexec, so no file written there can run or be mapped executable.
	NoExec []string `json:"no_exec,omitempty"`
	// NoExecTrees are read-only trees (the work tree, the home) mounted noexec as a whole, so
	// that a file shipped there cannot be mapped executable by the loader (`ld.so ./evil`,
	// LD_PRELOAD, dlopen) although no exec rule names it; ExecKeep are the paths inside them
	// that stay exec-mappable (each a bind of itself without noexec): the learned binaries and
	// libraries, the directory before the first wildcard of an exec glob, toolchain roots.
	NoExecTrees []string `json:"no_exec_trees,omitempty"`
	ExecKeep    []string `json:"exec_keep,omitempty"`
	// ExecOutputs are directories missing when the run starts, inside a noexec stage, that an
	// exec rule lies in (cargo's target/ in a fresh checkout): each becomes a mount of its own
	// without noexec when the command makes it (watchExecOutputs), so that only what the run
	// writes there maps executable. ExecKeep paths inside a noexec stage are kept exec too.
	ExecOutputs []string `json:"exec_outputs,omitempty"`
	// ExecFiles are learned programs the run writes straight into an existing directory of a
	// noexec stage (`gcc -o app && ./app` at the top of the work tree): each is bound exec over
	// itself, the file alone, when the command execs it (ServeExecOutputMkdirs), so that the
	// files the directory had (a shipped ./evil) stay noexec.
	ExecFiles []string `json:"exec_files,omitempty"`

	// Network.
	NetNS bool `json:"netns"` // the process is in a new network namespace: bring loopback up

	// Landlock; nil means the layer is not requested.
	Landlock *Landlock `json:"landlock,omitempty"`

	// DropCaps clears every capability (all sets, ambient, bounding) before exec.
	DropCaps bool `json:"drop_caps"`

	// Rlimits are set last, on the thread that execs (limits.go).
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// UserCounts are the user namespace's per-user counts (limits.go): the init stage sets them
	// before any layer (SetUserCounts), not in Apply.
	UserCounts []UserCount `json:"user_counts,omitempty"`

	// Degrade lets Apply continue when the kernel cannot enforce part of the Landlock layer
	// (see Downgrade); what was dropped is listed in the Result. False (the default) fails
	// closed with a *LayerError naming what is missing.
	Degrade bool `json:"degrade,omitempty"`
}

// Masked is a file shown with Content instead of what it holds.
type Masked struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// Landlock is the irrevocable filesystem/network/scope layer.
type Landlock struct {
	Read  []string `json:"read,omitempty"`  // read files and list directories below
	Write []string `json:"write,omitempty"` // read, write, create, delete, rename, truncate below
	Exec  []string `json:"exec,omitempty"`  // execute (files or everything below a directory)
	List  []string `json:"list,omitempty"`  // list directory entries below, no file contents
	// Hidden names entries no rule may reach through their parent directory: a read or exec
	// rule on an ancestor is split into rules on the other entries along the way (see the
	// package doc, "Hidden paths"), so that a file the host renames over or creates at a
	// hidden name during the run is not readable. The covers the mounts put there are.
	Hidden []string `json:"hidden,omitempty"`
	// Devices lists paths (e.g. /dev/null, /dev/tty) that need read/write and ioctl_dev.
	Devices []string `json:"devices,omitempty"`

	ConnectTCP []uint16 `json:"connect_tcp,omitempty"`
	BindTCP    []uint16 `json:"bind_tcp,omitempty"`
	// RestrictTCP handles TCP connect/bind at all (false: Landlock leaves TCP alone).
	RestrictTCP bool `json:"restrict_tcp"`

	ScopeSignals      bool `json:"scope_signals"`       // no signals to processes outside the sandbox
	ScopeAbstractUnix bool `json:"scope_abstract_unix"` // no connect to abstract unix sockets outside

	// MemfdTmpfs is the fd of the init stage's NoExecTmpfs (0: none): its files stand in for
	// memfds, which the command reads and writes (also reopened through /proc/self/fd/N), never
	// executes. Set by the stage that mounted it, never sent as data.
	MemfdTmpfs int `json:"-"`
}

// steps are the plan's layers in the order Apply applies them (see the package doc: mounts
// need the capabilities Landlock and the drop take away; the rlimits come last, on the thread
// that execs). A layer's field in Plan and its step here are what a new layer adds to the plan.
var steps = []struct {
	layer string
	apply func(p *Plan, res *Result) error
}{
	{LayerMounts, (*Plan).applyMounts},
	{LayerNetNS, func(p *Plan, _ *Result) error {
		if !p.NetNS {
			return nil
		}
		return bringUpLoopback()
	}},
	{LayerLandlock, func(p *Plan, res *Result) error {
		if p.Landlock == nil {
			return nil
		}
		return applyLandlock(p.Landlock, p.Degrade, res)
	}},
	{LayerCaps, func(p *Plan, _ *Result) error {
		if !p.DropCaps {
			return nil
		}
		return dropCaps()
	}},
	{LayerLimits, func(p *Plan, _ *Result) error { return setRlimits(p.Rlimits) }},
}

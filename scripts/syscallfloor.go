//go:build ignore

// syscallfloor measures what one syscall costs under each kernel mechanism sysprof uses, and
// under sysprof itself, in turns (issue 28): the floor a getppid storm under enforce or learn
// cannot go below on this kernel. As root:
//
//	gcc -O2 -o /tmp/victim testdata/victim/victim.c && make build
//	bin/sysprof learn --fresh -p /tmp/storm.yaml -- /tmp/victim storm-cpu 1000
//	go run scripts/syscallfloor.go -victim /tmp/victim -p /tmp/storm.yaml -rounds 12
//
// Each configuration runs `victim storm-cpu N` (the calls' thread CPU time, kernel time
// included, so that other load moves it less than the wall clock) and prints the median and
// the minimum ns per call, and the medians' ratio over bare:
//
//	bare             nothing attached
//	seccomp-allow    a one-instruction RET ALLOW filter: what any seccomp filter costs
//	seccomp-profile  the profile's compiled filter (sysprof's layout; EPERM for NOTIFY)
//	tp-exit          an empty program on one syscalls/sys_exit_<name> tracepoint: the guard's hook
//	profile+tp-exit  both: what enforce as root needs from the kernel
//	rawtp-enter      an empty raw_tp/sys_enter program: learn's counting hook
//	rawtp+tp-exit    both empty hooks: what learn needs from the kernel (sys_enter and its
//	                 path syscalls' exit tracepoints)
//	enforce, learn   bin/sysprof enforce -p P / learn --fresh
//
// Another process's syscall hook (another learn's raw_tp, another enforce's guard) taxes every
// process on the host, bare ones included: each run waits up to 5 s for none to be attached,
// and a run that met one is left out and counted under "drops". On a shared machine most runs
// may be dropped: measure on a quiet one.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "__install__" {
		install(os.Args[2], os.Args[3:])
	}
	victim := flag.String("victim", "/tmp/victim", "testdata/victim/victim.c, built")
	prof := flag.String("p", "", "a profile learned from `victim storm-cpu` (for its filter, enforce and learn)")
	sysprof := flag.String("sysprof", "bin/sysprof", "the sysprof binary")
	rounds := flag.Int("rounds", 10, "rounds; each runs every configuration once, in turn")
	n := flag.Int("n", 2000000, "getppid calls per run")
	keep := flag.Bool("keep", false, "keep the runs that met another process's syscall hook (a shared machine: every configuration pays it, so only the differences mean something)")
	flag.Parse()
	if *prof == "" {
		fail("-p PROFILE is required")
	}
	p, err := policy.Load(*prof)
	if err != nil {
		fail(err.Error())
	}
	f, err := seccomp.Compile(p, "", seccomp.Options{})
	if err != nil {
		fail(err.Error())
	}
	filt, err := os.CreateTemp("", "floor-*.bpf")
	if err != nil {
		fail(err.Error())
	}
	defer os.Remove(filt.Name())
	filt.Write(seccomp.Standalone(f.Program))
	filt.Close()

	storm := []string{*victim, "storm-cpu", strconv.Itoa(*n)}
	self := "/proc/self/exe"
	type conf struct {
		name string
		hook string // "", "tp", "raw", "raw+tp"
		argv []string
	}
	confs := []conf{
		{"bare", "", storm},
		{"seccomp-allow", "", append([]string{self, "__install__", "-"}, storm...)},
		{"seccomp-profile", "", append([]string{self, "__install__", filt.Name()}, storm...)},
		{"tp-exit", "tp", storm},
		{"profile+tp-exit", "tp", append([]string{self, "__install__", filt.Name()}, storm...)},
		{"rawtp-enter", "raw", storm},
		{"rawtp+tp-exit", "raw+tp", storm},
		{"enforce", "", append([]string{*sysprof, "enforce", "-p", *prof, "--"}, storm...)},
		{"learn", "", append([]string{*sysprof, "learn", "--fresh", "-p", *prof + ".floor.yaml", "--"}, storm...)},
	}
	defer os.Remove(*prof + ".floor.yaml")
	defer os.Remove(*prof + ".floor.yaml.lock")
	res := map[string][]float64{}
	dirty := map[string]int{}
	re := regexp.MustCompile(`([0-9.]+) ns/call`)
	for r := 0; r < *rounds+1; r++ {
		for _, c := range confs {
			// Another session's syscall hook taxes every process, bare ones included: wait
			// for the host to have none (up to 5 s), and drop a run that met one.
			clean := *keep || waitClean(5*time.Second, nil)
			var ls []link.Link
			if c.hook == "tp" || c.hook == "raw+tp" {
				ls = append(ls, attach(ebpf.TracePoint, func(prog *ebpf.Program) (link.Link, error) {
					return link.Tracepoint("syscalls", "sys_exit_openat", prog, nil)
				}))
			}
			if c.hook == "raw" || c.hook == "raw+tp" {
				ls = append(ls, attach(ebpf.RawTracepoint, func(prog *ebpf.Program) (link.Link, error) {
					return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: prog})
				}))
			}
			out, err := exec.Command(c.argv[0], c.argv[1:]...).CombinedOutput()
			own := map[link.ID]bool{}
			for _, l := range ls {
				if info, err := l.Info(); err == nil {
					own[info.ID] = true
				}
			}
			if !*keep && c.name != "enforce" && c.name != "learn" && foreignHooks(own) > 0 {
				clean = false // (enforce's guard and learn's probe linger after their run)
			}
			for _, l := range ls {
				l.Close()
			}
			m := re.FindSubmatch(out)
			if err != nil || m == nil {
				fail(fmt.Sprintf("%s: %v\n%s", c.name, err, out))
			}
			if r == 0 {
				continue // warm-up round
			}
			if !clean {
				dirty[c.name]++
				continue
			}
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			res[c.name] = append(res[c.name], v)
		}
	}
	base := median(res["bare"])
	fmt.Printf("%-16s %9s %9s %7s %6s   (%d rounds of %d getppid, ns of thread CPU per call)\n", "", "median", "min", "ratio", "drops", *rounds, *n)
	for _, c := range confs {
		v := res[c.name]
		if len(v) == 0 {
			fmt.Printf("%-16s %9s %9s %7s %6d\n", c.name, "-", "-", "-", dirty[c.name])
			continue
		}
		fmt.Printf("%-16s %9.1f %9.1f %6.2fx %6d\n", c.name, median(v), slices.Min(v), median(v)/base, dirty[c.name])
	}
	if len(res["bare"]) == 0 {
		fmt.Println("(no clean bare run: the ratios are NaN)")
	}
	fmt.Println("drops: runs left out because another process's syscall hook (a raw_tp on sys_enter/sys_exit, a syscalls/ tracepoint program) was attached")
}

// foreignHooks counts the programs attached to a syscall hook on the host, but for the links
// in own: any of them taxes every syscall of every process.
func foreignHooks(own map[link.ID]bool) int {
	n := 0
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		if own[it.ID] {
			continue
		}
		info, err := it.Link.Info()
		if err != nil {
			continue
		}
		if rt := info.RawTracepoint(); rt != nil && strings.HasPrefix(rt.Name, "sys_") {
			n++
		}
		if pe := info.PerfEvent(); pe != nil {
			if tp := pe.Tracepoint(); tp != nil && (strings.HasPrefix(tp.Tracepoint, "sys_") || tp.Tracepoint == "") {
				n++
			}
		}
	}
	return n
}

// waitClean waits up to d for no foreign syscall hook, and reports whether it got there.
func waitClean(d time.Duration, own map[link.ID]bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if foreignHooks(own) == 0 {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func attach(t ebpf.ProgramType, at func(*ebpf.Program) (link.Link, error)) link.Link {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: t, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		fail("load: " + err.Error())
	}
	l, err := at(prog)
	prog.Close()
	if err != nil {
		fail("attach: " + err.Error())
	}
	return l
}

// install loads a raw filter ("-": RET ALLOW) on this thread and execs argv, as enforce's init
// stage does.
func install(file string, argv []string) {
	runtime.LockOSThread()
	var insns []byte
	if file == "-" {
		insns = []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f} // BPF_RET|BPF_K SECCOMP_RET_ALLOW, little-endian
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			fail(err.Error())
		}
		insns = b
	}
	prog := unix.SockFprog{Len: uint16(len(insns) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&insns[0]))}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err.Error())
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fail("seccomp: " + e.Error())
	}
	fail(syscall.Exec(argv[0], argv, os.Environ()).Error())
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "syscallfloor:", msg)
	os.Exit(1)
}

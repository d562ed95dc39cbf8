package profiler

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/trace"
)

func TestJoinComponents(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "/",
		"etc\x00":                 "/etc",
		"hosts\x00etc\x00":        "/etc/hosts",
		"c\x00b\x00a\x00\x00":     "/a/b/c",
		"x y\x00dir z\x00usr\x00": "/usr/dir z/x y",
	} {
		if got := joinComponents([]byte(in)); got != want {
			t.Errorf("joinComponents(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJoinUnder(t *testing.T) {
	for _, c := range []struct{ dir, comps, want string }{
		{"/usr", "", "/usr"}, // the walk stopped at once: the file is the directory
		{"/usr", "lib\x00", "/usr/lib"},
		{"/usr", "x\x00lib\x00", "/usr/lib/x"},
		{"/", "etc\x00", "/etc"},
	} {
		if got := joinUnder(c.dir, []byte(c.comps)); got != c.want {
			t.Errorf("joinUnder(%q, %q) = %q, want %q", c.dir, c.comps, got, c.want)
		}
	}
}

// An event naming a directory id the reader never got cannot be placed: it is counted as
// undecodable (the run is then marked incomplete), never recorded under a wrong path.
func TestUnknownDirectoryID(t *testing.T) {
	c := newCollector(0, time.Now())
	e := bpf.LearnFileEvent{Kind: uint32(bpf.LearnEvKindEV_FILE), Access: uint32(bpf.LearnAccessKindACC_METADATA), RefId: 7}
	name := []byte("f\x00")
	e.PathLen = uint16(len(name))
	if c.file(e, name) {
		t.Errorf("a file event relative to unknown directory id 7 was accepted")
	}
	c.bases.set(7, "/d")
	if !c.file(e, name) || len(c.fileRecs) != 1 || c.paths[c.fileRecs[0].path] != "/d/f" {
		t.Errorf("with id 7 = /d: records %+v", c.fileRecs)
	}
}

// joinName skips filepath.Clean for a plain name; it must agree with filepath.Join.
func TestJoinNameIsJoin(t *testing.T) {
	for _, dir := range []string{"/", "/usr", "/usr/share", "/a//b", "/usr/", "/x y"} {
		for _, name := range []string{"f", "", ".", "..", "a/b", "../c", "a/", "x y", ".hidden", "..."} {
			if got, want := joinName(dir, name), filepath.Join(dir, name); got != want {
				t.Errorf("joinName(%q, %q) = %q, want %q", dir, name, got, want)
			}
		}
	}
}

func TestSyscallOpsHaveNumbers(t *testing.T) {
	for name := range scOps {
		if _, ok := arch.X86_64.SyscallNames[name]; !ok {
			t.Errorf("%s has no x86_64 number", name)
		}
		if nr := arch.X86_64.SyscallNames[name]; nr >= 1024 {
			t.Errorf("%s = %d does not fit sc_ops", name, nr)
		}
	}
}

func TestExitDecoding(t *testing.T) {
	c := newCollector(0, time.Unix(0, 0))
	c.handle(execRecord(t, 10, 1, "true\x00bin\x00usr\x00", "true"))
	c.handle(le(bpf.LearnExitEvent{Kind: uint32(bpf.LearnEvKindEV_EXIT), Tgid: 10, ExitCode: 3 << 8}))
	c.handle(execRecord(t, 11, 2, "sh\x00bin\x00", "sh"))
	c.handle(le(bpf.LearnExitEvent{Kind: uint32(bpf.LearnEvKindEV_EXIT), Tgid: 11, ExitCode: 9}))
	if c.undecodable != 0 || len(c.procs) != 2 {
		t.Fatalf("undecodable %d, procs %+v", c.undecodable, c.procs)
	}
	if p := c.procs[0]; p.Exe != "/usr/bin/true" || *p.ExitCode != 3 || p.Signal != 0 {
		t.Errorf("exit(3): %+v", p)
	}
	if p := c.procs[1]; p.Exe != "/bin/sh" || *p.ExitCode != 137 || p.Signal != 9 {
		t.Errorf("SIGKILL: %+v", p)
	}
}

func TestDNSPacket(t *testing.T) {
	c := newCollector(0, time.Unix(0, 0))
	name := dnsmessage.MustNewName("example.test.")
	q := dnsmessage.Question{Name: name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
	query, _ := (&dnsmessage.Message{Header: dnsmessage.Header{ID: 1}, Questions: []dnsmessage.Question{q}}).Pack()
	resp, _ := (&dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 1, Response: true},
		Questions: []dnsmessage.Question{q},
		Answers: []dnsmessage.Resource{
			{Header: dnsmessage.ResourceHeader{Name: name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}, Body: &dnsmessage.AResource{A: [4]byte{10, 1, 2, 3}}},
			{Header: dnsmessage.ResourceHeader{Name: name, Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET}, Body: &dnsmessage.AAAAResource{AAAA: [16]byte{0x20, 0x01, 15: 1}}},
		},
	}).Pack()
	ev := func(egress uint32, payload []byte) bpf.LearnDnsEvent {
		e := bpf.LearnDnsEvent{Kind: uint32(bpf.LearnEvKindEV_DNS), Egress: egress, Family: 2, Sport: 40000, Dport: 53, Len: uint32(len(payload))}
		e.Daddr = [16]byte{127, 0, 0, 53}
		if egress == 0 {
			e.Sport, e.Dport, e.Saddr, e.Daddr = e.Dport, e.Sport, e.Daddr, e.Saddr
		}
		copy(e.Data[:], payload)
		return e
	}
	c.handle(le(ev(1, query)))
	c.handle(le(ev(0, resp)))
	d := c.dns["example.test"]
	if d == nil || d.server != "127.0.0.53:53" || !d.addrs["10.1.2.3"] || !d.addrs["2001::1"] {
		t.Fatalf("dns = %+v", d)
	}
	if c.addrTo["10.1.2.3"] != "example.test" {
		t.Errorf("address not tied to the name: %v", c.addrTo)
	}
}

// TestSortedFiles: file accesses come out ordered by executable, path, access and errno (the
// trace's order), merged per key, with counts, whatever order they were added in.
func TestSortedFiles(t *testing.T) {
	c := newCollector(0, time.Now())
	acc := func(name string) accessID { return accessIDs[name] }
	type add struct {
		path, access string
		errno        int
		dir          bool
		exe          string
	}
	adds := []add{
		{"/usr/lib", trace.AccessList, 0, true, "/bin/zsh"},
		{"/etc/hosts", trace.AccessRead, 0, false, "/bin/zsh"},
		{"/etc/hosts", trace.AccessRead, 2, false, "/bin/zsh"},
		{"/etc/hosts", trace.AccessMetadata, 0, false, "/bin/zsh"},
		{"/etc/hosts", trace.AccessRead, 0, false, "/bin/bash"},
		{"/etc/hosts-", trace.AccessRead, 0, false, "/bin/bash"},
		{"/etc/hosts/x", trace.AccessRead, 13, false, "/bin/bash"},
		{"/etc/hosts", trace.AccessRead, 0, false, "/bin/zsh"}, // again
		{"/usr/lib", trace.AccessList, 0, false, "/bin/zsh"},   // again, not seen as a dir
		{"/a", trace.AccessWrite, 5000, false, "/bin/zsh"},     // an errno past MAX_ERRNO: still sorted
		{"/a", trace.AccessWrite, 1, false, "/bin/zsh"},
	}
	for _, a := range adds {
		c.addFile(a.path, acc(a.access), a.errno, a.dir, a.exe)
	}
	var got []string
	for _, f := range c.sortedFiles() {
		got = append(got, fmt.Sprintf("%s %s %s %d dir=%v n=%d", f.Exe, f.Path, f.Access, f.Errno, f.Dir, f.Count))
	}
	want := []string{
		"/bin/bash /etc/hosts read 0 dir=false n=1",
		"/bin/bash /etc/hosts- read 0 dir=false n=1",
		"/bin/bash /etc/hosts/x read 13 dir=false n=1",
		"/bin/zsh /a write 1 dir=false n=1",
		"/bin/zsh /a write 5000 dir=false n=1",
		"/bin/zsh /etc/hosts metadata 0 dir=false n=1",
		"/bin/zsh /etc/hosts read 0 dir=false n=2",
		"/bin/zsh /etc/hosts read 2 dir=false n=1",
		"/bin/zsh /usr/lib list 0 dir=true n=2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sorted files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The programs and maps warm.go expects are learn.c's, with their types.
func TestWarmKindsMatchObject(t *testing.T) {
	spec, err := bpf.LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Programs) != len(learnProgTypes) {
		t.Errorf("learn.c has %d programs, learnProgTypes %d", len(spec.Programs), len(learnProgTypes))
	}
	for name, p := range spec.Programs {
		if typ, ok := learnProgTypes[name]; !ok || typ != p.Type {
			t.Errorf("program %s: %v, learnProgTypes says %v", name, p.Type, typ)
		}
	}
	n := 0
	for name, m := range spec.Maps {
		if name[0] == '.' {
			continue // data sections
		}
		n++
		if typ, ok := learnMapTypes[name]; !ok || typ != m.Type {
			t.Errorf("map %s: %v, learnMapTypes says %v", name, m.Type, typ)
		}
	}
	if n != len(learnMapTypes) {
		t.Errorf("learn.c has %d maps, learnMapTypes %d", n, len(learnMapTypes))
	}
}

// The reader sorts paths in batches while the command runs; the trace must come out in the
// order a sort of everything at the end gives, whatever the batches were.
func TestPathsSortedInBatches(t *testing.T) {
	for _, batch := range []int{1, 3, 100, 1 << 20} {
		c := newCollector(0, time.Now())
		var want []string
		for i := range 500 {
			p := fmt.Sprintf("/usr/%c/%d", 'a'+i*7%26, i*7919%1000)
			c.pathID(p)
			want = append(want, p)
			if i%37 == 0 {
				c.sortNewPaths(batch)
			}
		}
		slices.Sort(want)
		c.sortNewPaths(0)
		var got []string
		for _, i := range c.pathOrder {
			got = append(got, c.paths[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("batches of %d: paths out of order:\n got %q\nwant %q", batch, got[:10], want[:10])
		}
	}
}

// While the command runs, a batch is merged only once it is a 32nd of what is sorted: each merge
// copies all of it, and fixed batches made a long run's sorting quadratic.
func TestSortBatchesGrowWithSorted(t *testing.T) {
	c := newCollector(0, time.Now())
	add := func(n int) {
		for range n {
			c.pathID(fmt.Sprintf("/p/%d", len(c.paths)))
		}
	}
	add(64 << 10)
	c.sortNewPaths(newPathsToSort)
	if len(c.pathOrder) != 64<<10 {
		t.Fatalf("first batch: %d paths sorted, want all %d", len(c.pathOrder), 64<<10)
	}
	add(1500) // more than newPathsToSort, less than 64k/32
	c.sortNewPaths(newPathsToSort)
	if len(c.pathOrder) != 64<<10 {
		t.Errorf("a batch of 1500 after 64k was merged (%d sorted): merges would copy 64k each 1024 paths", len(c.pathOrder))
	}
	add(600)
	c.sortNewPaths(newPathsToSort)
	if want := 64<<10 + 2100; len(c.pathOrder) != want {
		t.Errorf("a batch of 2100 after 64k: %d sorted, want %d", len(c.pathOrder), want)
	}
}

// dirIDs answers as the map it replaced did: ids in order, out of order, far past the end,
// and ids never set.
func TestDirIDs(t *testing.T) {
	var d dirIDs
	want := map[uint32]string{}
	set := func(id uint32, dir string) { d.set(id, dir); want[id] = dir }
	set(2, "/b")
	set(1, "/a")
	set(5, "/e")
	set(1<<30, "/far")
	set(2, "/b2")
	set(dirIDsAhead+7, "/ahead")
	for _, id := range []uint32{0, 1, 2, 3, 4, 5, 6, dirIDsAhead + 7, dirIDsAhead + 8, 1 << 30, 1<<30 + 1, ^uint32(0)} {
		got, ok := d.get(id)
		w, wok := want[id]
		if got != w || ok != wok {
			t.Errorf("get(%d) = %q, %v; want %q, %v", id, got, ok, w, wok)
		}
	}
	if len(d.byID) > 2*dirIDsAhead {
		t.Errorf("the slice grew to %d for ids up to %d", len(d.byID), dirIDsAhead+7)
	}
}

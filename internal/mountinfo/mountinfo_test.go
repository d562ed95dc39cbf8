package mountinfo

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Entry
	}{
		{"plain", "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
			Entry{ID: 22, Parent: 1, Root: "/", MountPoint: "/proc", FSType: "proc", Source: "proc"}},
		{"mount read-only, escaped space", `36 35 98:0 /mnt1 /mnt\040space ro,noatime master:1 - ext3 /dev/root rw,errors=continue`,
			Entry{ID: 36, Parent: 35, Root: "/mnt1", MountPoint: "/mnt space", ReadOnly: true, FSType: "ext3", Source: "/dev/root"}},
		{"superblock read-only, no optional fields", "40 22 0:30 / /sb-ro rw - ext4 /dev/sdb ro",
			Entry{ID: 40, Parent: 22, Root: "/", MountPoint: "/sb-ro", ReadOnly: true, FSType: "ext4", Source: "/dev/sdb"}},
		{"two optional fields", "41 22 0:31 / /m rw,relatime shared:3 master:1 - tmpfs tmpfs rw",
			Entry{ID: 41, Parent: 22, Root: "/", MountPoint: "/m", FSType: "tmpfs", Source: "tmpfs"}},
		{"an option named like ro is not ro", "42 22 0:32 / /m rw,rootcontext=x - tmpfs tmpfs rw,errors=remount-ro",
			Entry{ID: 42, Parent: 22, Root: "/", MountPoint: "/m", FSType: "tmpfs", Source: "tmpfs"}},
		{"tab, newline, backslash escapes in root, mount point and source", `43 22 0:33 /r\011t /a\012b\134c rw - tmpfs my\040src rw`,
			Entry{ID: 43, Parent: 22, Root: "/r\tt", MountPoint: "/a\nb\\c", FSType: "tmpfs", Source: "my src"}},
		{"subtree of cgroup2", "30 24 0:26 /user.slice /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate",
			Entry{ID: 30, Parent: 24, Root: "/user.slice", MountPoint: "/sys/fs/cgroup", FSType: "cgroup2", Source: "cgroup2"}},
	} {
		got, err := Parse(strings.NewReader(tc.line + "\n"))
		if err != nil || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: Parse = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for _, line := range []string{
		"garbage",
		"22 1 0:21 / /proc rw shared:12 proc proc rw", // no separator
		"x 1 0:21 / /proc rw - proc proc rw",          // id not a number
		"22 y 0:21 / /proc rw - proc proc rw",         // parent not a number
		"22 1 0:21 / /proc rw - proc proc",            // no superblock options
		"22 1 0:21 / /proc - proc proc rw",            // the separator where the options are
	} {
		if got, err := Parse(strings.NewReader("22 1 0:21 / /proc rw - proc proc rw\n" + line + "\n")); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", line, got)
		}
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:        "/plain",
		`/a\040b`:       "/a b",
		`\011\012\134`:  "\t\n\\",
		`/end\040`:      "/end ",
		`/short\04`:     `/short\04`, // not three digits
		`/big\477`:      `/big\477`,  // not a byte
		`/not\08x`:      `/not\08x`,  // 8 is not octal
		`/lone\`:        `/lone\`,
		`/two\\040`:     `/two\ `, // a raw backslash, then an escape
		`/null\000byte`: "/null\x00byte",
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	ms, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ms, func(e Entry) bool { return e.MountPoint == "/" }) {
		t.Errorf("no / in /proc/self/mountinfo: %+v", ms)
	}
}

// The init stage reads the table twice a run: a line without escapes costs the scanner's
// string and nothing else.
func TestParseAllocations(t *testing.T) {
	line := "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
	if n := testing.AllocsPerRun(100, func() { parseLine(line) }); n != 0 {
		t.Errorf("parseLine allocates %v times a line, want 0", n)
	}
}

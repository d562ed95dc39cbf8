package hostsfile

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

const sample = `127.0.0.1	localhost
127.0.1.1	build-host.example build-host # the host's own name
::1	localhost ip6-localhost ip6-loopback
ff02::1	ip6-allnodes
10.0.0.5	Registry.Internal. registry
# 10.0.0.6 commented
bogus line
172.17.0.3	postgres
10.0.0.5	mirror
`

func TestNames(t *testing.T) {
	m := Names(sample)
	if got := m[netip.MustParseAddr("10.0.0.5")]; !slices.Equal(got, []string{"registry.internal", "registry", "mirror"}) {
		t.Errorf("10.0.0.5: %q", got)
	}
	if got := m[netip.MustParseAddr("172.17.0.3")]; !slices.Equal(got, []string{"postgres"}) {
		t.Errorf("172.17.0.3: %q", got)
	}
	if _, ok := m[netip.MustParseAddr("127.0.0.1")]; ok {
		t.Error("loopback names listed")
	}
	if _, ok := m[netip.MustParseAddr("10.0.0.6")]; ok {
		t.Error("commented line parsed")
	}
}

func TestLoopbackOnly(t *testing.T) {
	got := LoopbackOnly(sample)
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "127.0.1.1\tbuild-host.example build-host\n", "::1\tlocalhost ip6-localhost ip6-loopback\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, gone := range []string{"registry", "postgres", "10.0.0.5", "ip6-allnodes"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q kept in:\n%s", gone, got)
		}
	}
	if got := LoopbackOnly(""); !strings.Contains(got, "127.0.0.1\tlocalhost\n") {
		t.Errorf("empty hosts file: no localhost line:\n%s", got)
	}
}

func TestFamilies(t *testing.T) {
	has6, no4 := Families("127.0.0.1 localhost lo.test\n::1 localhost ip6-localhost\n10.0.0.1 v4.test dual.test\nfd00::1 v6.test dual.test\nfd00::2 six.test\n0.0.0.0 blocked.test\n::ffff:10.0.0.2 mapped.test\n")
	if want := []string{"dual.test", "six.test", "v6.test"}; !slices.Equal(has6, want) {
		t.Errorf("has6 %q, want %q", has6, want)
	}
	if want := []string{"six.test", "v6.test"}; !slices.Equal(no4, want) {
		t.Errorf("no4 %q, want %q", no4, want)
	}
}

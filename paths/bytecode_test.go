package paths

import "testing"

func TestBytecodeCache(t *testing.T) {
	for p, want := range map[string]bool{
		"/w/__pycache__": true,
		"/w/__pycache__/test_a.cpython-311-pytest-7.2.1.pyc.8": true,
		"$WORKDIR/pkg/__pycache__/a.cpython-311.pyc":           true,
		"/w/__pycache__/evil.so":                               false,
		"/w/pkg/a.py":                                          false,
		"/w/pycache/a.pyc":                                     false,
	} {
		if got := BytecodeCache(p); got != want {
			t.Errorf("BytecodeCache(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestKeptBytecodeCache(t *testing.T) {
	for p, want := range map[string]bool{
		"/usr/lib/python3/dist-packages/xdist/__pycache__":                                     true,
		"/usr/lib/python3/dist-packages/xdist/__pycache__/plugin.cpython-311-pytest-7.2.1.pyc": true,
		"/usr/lib/python3/dist-packages/xdist/__pycache__/plugin.cpython-311.pyc.140":          true,
		"/opt/tool/lib/__pycache__/a.cpython-312.pyc":                                          true,
		"$WORKDIR/__pycache__/a.cpython-311.pyc":                                               true,
		"$WORKDIR/pkg/__pycache__":                                                             true,
		"$HOME/.local/lib/python3.11/site-packages/x/__pycache__/a.cpython-311.pyc":            true,
		"/home/a/w/__pycache__":                                                                true,
		"/usr/lib/python3/dist-packages/xdist/plugin.py":                                       false,
		"/usr/lib/python3/dist-packages/xdist/__pycache__/evil.so":                             false,
		"/tmp/x/__pycache__/a.cpython-311.pyc":                                                 false,
		"$TMPDIR/x/__pycache__/a.cpython-311.pyc":                                              false,
	} {
		if got := KeptBytecodeCache(p); got != want {
			t.Errorf("KeptBytecodeCache(%q) = %v, want %v", p, got, want)
		}
	}
}

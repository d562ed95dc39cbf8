package report

import (
	"bytes"
	"os"
	"testing"
)

// The reset goes to a terminal only: a pipe, a file or a buffer (a CI log, a test) gets none.
func TestResetTerminalOnlyOnATerminal(t *testing.T) {
	var b bytes.Buffer
	ResetTerminal(&b)
	if b.Len() != 0 {
		t.Errorf("a buffer got %q", b.String())
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	ResetTerminal(f)
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("a file got %d bytes", st.Size())
	}
	f.Close()
}

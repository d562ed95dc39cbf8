package netproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// chunkReader yields its data in the given chunk sizes, cycling.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.data))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// The echo scan finds the needle wherever the reads cut it (one byte at a time, around the
// 64 KiB and 256 KiB buffer sizes), passes none of it, and passes everything else unchanged.
func TestScanReaderAcrossReads(t *testing.T) {
	needle := []byte(realToken)
	errFound := errors.New("found")
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 600<<10)
	for i := range body {
		body[i] = "abcdefgh"[rng.IntN(8)]
	}
	for _, sizes := range [][]int{{1}, {7, 13}, {16 << 10}, {64<<10 - 1, 3}, {rawBuf + 5}, {len(needle) - 1}} {
		for _, at := range []int{0, 1, 16<<10 - 3, 64<<10 - len(needle)/2, rawBuf - 1, len(body) - len(needle)} {
			data := bytes.Clone(body)
			copy(data[at:], needle)
			s := &scanReader{r: &chunkReader{data: data, sizes: sizes}, needle: needle, found: errFound}
			out, err := io.ReadAll(s)
			if !errors.Is(err, errFound) || !s.tripped {
				t.Fatalf("chunks %v, needle at %d: not found (%v)", sizes[:min(len(sizes), 2)], at, err)
			}
			if bytes.Contains(out, needle[:len(needle)/2+1]) && bytes.Index(out, needle[:len(needle)/2+1]) >= at {
				t.Fatalf("chunks %v, needle at %d: part of it passed", sizes, at)
			}
		}
		s := &scanReader{r: &chunkReader{data: body, sizes: sizes}, needle: needle, found: errFound}
		if out, err := io.ReadAll(s); err != nil || !bytes.Equal(out, body) {
			t.Fatalf("chunks %v: clean body changed (%d of %d bytes, %v)", sizes, len(out), len(body), err)
		}
	}
	if err := iotest.TestReader(&scanReader{r: bytes.NewReader(body), needle: needle, found: errFound}, body); err != nil {
		t.Fatal(err)
	}
}

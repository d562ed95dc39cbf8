package profiler

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// measureWrites is what the run's writes in its work tree left when it ended: bytes allocated
// (a regular file's size in whole pages, as the tmpfs an enforced run's changeset lives on
// counts it) and files, directories and links, each path written or created counted once.
// This is what an enforced run's changeset holds for the same work (a file the run only
// changed is copied up whole there too); what the run wrote and removed again is not seen,
// which LimitMargin covers.
func measureWrites(t *trace.Trace) (bytes, files int64, measured bool) {
	wd := filepath.Clean(t.Context["WORKDIR"])
	if !filepath.IsAbs(wd) {
		return 0, 0, false
	}
	seen := map[string]bool{}
	for _, f := range t.Files {
		if !f.OK || (f.Access != trace.AccessWrite && f.Access != trace.AccessCreate) || seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		if f.Path == wd || !paths.Within(f.Path, wd) {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(f.Path, &st) != nil {
			continue
		}
		files++
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			bytes += (st.Size + pageSize - 1) / pageSize * pageSize
		}
	}
	return bytes, files, true
}

const pageSize = 4096

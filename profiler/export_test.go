package profiler

// WarmTakeovers counts the runs of the test binary that took a warm probe over.
var WarmTakeovers = &warmTakeovers

// SwapNextRunID sets how a run that takes a probe over numbers itself after the probe's last
// run, and returns what restores it.
func SwapNextRunID(next func(prev uint64) uint64) (restore func()) {
	old := nextRunID
	nextRunID = next
	return func() { nextRunID = old }
}

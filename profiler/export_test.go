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

// Spills counts the runs of the test binary that read the spill ring.
var Spills = &spills

// SwapEventsRingBytes sets the size of the first ring (events) of the runs that follow, which
// are then never handed on, and returns what restores it.
func SwapEventsRingBytes(n int) (restore func()) {
	old := eventsRingMax
	eventsRingMax = n
	return func() { eventsRingMax = old }
}

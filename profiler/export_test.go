package profiler

// WarmTakeovers counts the runs of the test binary that took a warm probe over.
var WarmTakeovers = &warmTakeovers

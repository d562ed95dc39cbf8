package profiler

// WarmTakeovers counts the runs of the test binary that took a warm probe over.
var WarmTakeovers = &warmTakeovers

// ProcStart is procStart: a process's start time, ok false when it is gone or a zombie.
var ProcStart = procStart

// Package policy owns the profile: the versioned, plain-data policy for one command (syscall
// names and argument rules, filesystem paths, network endpoints, binaries), its YAML file format
// and schema, atomic load/save, Merge and Diff with risk classes. It does no I/O on the host
// beyond its own file and knows nothing about syscall numbers, Landlock or mounts: compiling a
// profile for a host is the enforcer's job.
package policy

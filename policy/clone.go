package policy

import "slices"

// Clone returns a deep copy of p: changing the copy never changes p.
func Clone(p *Profile) *Profile {
	if p == nil {
		return nil
	}
	q := *p
	q.Metadata.Command = slices.Clone(p.Metadata.Command)
	q.Metadata.IncompleteReasons = slices.Clone(p.Metadata.IncompleteReasons)
	q.Metadata.LearnedOn = slices.Clone(p.Metadata.LearnedOn)
	q.Syscalls.Architectures = slices.Clone(p.Syscalls.Architectures)
	q.Syscalls.Allow = slices.Clone(p.Syscalls.Allow)
	q.Syscalls.Args = slices.Clone(p.Syscalls.Args)
	for i := range q.Syscalls.Args {
		q.Syscalls.Args[i].Values = slices.Clone(q.Syscalls.Args[i].Values)
		q.Syscalls.Args[i].Flags = slices.Clone(q.Syscalls.Args[i].Flags)
		q.Syscalls.Args[i].Deny = slices.Clone(q.Syscalls.Args[i].Deny)
	}
	q.Filesystem.Read = slices.Clone(p.Filesystem.Read)
	q.Filesystem.Write = slices.Clone(p.Filesystem.Write)
	q.Filesystem.Exec = slices.Clone(p.Filesystem.Exec)
	q.Filesystem.List = slices.Clone(p.Filesystem.List)
	q.Filesystem.Hidden = slices.Clone(p.Filesystem.Hidden)
	q.Network.Connect = slices.Clone(p.Network.Connect)
	q.Network.Send = slices.Clone(p.Network.Send)
	q.Network.Bind = slices.Clone(p.Network.Bind)
	q.Network.Resolve = slices.Clone(p.Network.Resolve)
	q.Binaries = slices.Clone(p.Binaries)
	q.Env.Pass = slices.Clone(p.Env.Pass)
	q.Credentials = cloneCredentials(p.Credentials)
	return &q
}

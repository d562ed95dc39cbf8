package policy

// Review returns the widenings from old to new that a person should look at before trusting
// new, as Diff rates them: every critical one (writes to protected paths, shell rc files,
// services, cron and anything outside the work tree and caches; writes under /proc; readable
// secrets; privileged syscalls and argument values) and every new network endpoint rated high
// or above (new hosts, ports, unix sockets of other services). It is what `sysprof learn` lists
// after a run and what `learn --strict` fails on. old may be nil (a fresh profile). The order
// is Diff's: worst first.
func Review(old, new *Profile) []Change {
	var out []Change
	for _, c := range Diff(old, new) {
		if !c.Widens {
			continue
		}
		switch {
		case c.Risk >= RiskCritical:
		case c.Risk >= RiskHigh && (c.Section == SectionConnect || c.Section == SectionSend || c.Section == SectionBind):
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

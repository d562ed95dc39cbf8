package policy

// Review returns the widenings from old to new that a person should look at before trusting
// new, as Diff rates them: every critical one (writes to protected paths, shell rc files,
// services, cron and anything outside the work tree and caches; writes under /proc; readable
// secrets; privileged syscalls and argument values) and every new network endpoint rated high
// or above (new hosts, ports, unix sockets of other services), and a private /tmp turned off
// (also by a fresh learn: nothing to diff against). It is what `sysprof learn` lists
// after a run and what `learn --strict` fails on. old may be nil (a fresh profile). The order
// is Diff's: worst first.
func Review(old, new *Profile) []Change {
	var out []Change
	if old == nil && new != nil && !new.Filesystem.PrivateTmp {
		// A fresh learn that turned a layer off says so (Diff sees no change from nothing).
		out = append(out, Change{Kind: Widened, Section: SectionPrivateTmp, Item: "privateTmp: false", Widens: true, Risk: RiskHigh,
			Reason: "no private /tmp: the command used temp files it did not create and sees the host's /tmp"})
	}
	for _, c := range Diff(old, new) {
		if !c.Widens {
			continue
		}
		switch {
		case c.Risk >= RiskCritical:
		case c.Risk >= RiskHigh && (c.Section == SectionConnect || c.Section == SectionSend || c.Section == SectionBind):
		case c.Section == SectionPrivateTmp: // a layer turned off, never silently
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

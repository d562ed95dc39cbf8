package synth

// sendFamily is the send calls: which one a tool makes depends on its host, not on what it
// does (the destinations are the network rules'). Its own file, appended last to Families.
var sendFamily = Family{Name: "send",
	Why:     "sending on a socket the process holds: glibc's resolver asks A and AAAA at once with sendmmsg on a dual-stack host and sendto on an IPv4-only one; runtimes pick send, sendto or sendmsg (the destinations are the network rules')",
	Members: []string{"send", "sendto", "sendmsg", "sendmmsg"}}

func init() { Families = append(Families, sendFamily) }

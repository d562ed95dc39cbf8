package policy

// The user database. A program asks it (getpwuid, getgrgid) by its environment, not by what it
// does: python's site.py and node's os.homedir() look the user's home up when HOME is unset,
// as cargo and bash do; ls -l and id name owners. glibc then reads /etc/nsswitch.conf,
// /etc/passwd and /etc/group (every profile may read them: the enforcer's base, never learned
// as rules, so they never drift) and first asks nscd: a unix stream socket connected to
// /run/nscd/socket, which the sandbox hides like every host daemon's socket, so the lookup
// falls back to the files. Refused, the probe is a denial in every such run, and node's
// homedir lookup fails outright (npm exits 243).

// UserDatabaseCalls are the calls of glibc's nscd probe.
var UserDatabaseCalls = []string{"socket", "connect"}

// userDatabaseArgs are the probe's socket arguments: AF_UNIX, SOCK_STREAM, protocol 0.
var userDatabaseArgs = []ArgRule{
	{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_UNIX"}},
	{Syscall: "socket", Arg: 1, Name: "type", Mask: "0xf", Values: []string{"SOCK_STREAM"}},
	{Syscall: "socket", Arg: 2, Name: "protocol", Values: []string{"0"}},
}

// CloseUserDatabase returns the UserDatabaseCalls p lacks (allowed says which it has) and
// rules with the probe's socket arguments added (a socket p did not allow takes only these;
// a values rule p has is widened to hold them). enforce (the seccomp compiler) applies it to
// every profile, --exact included, as the base reads: a unix stream socket reaches no host
// daemon (their sockets are hidden unless a rule names one) and connect adds nothing to what
// the network rules decide. drift compares with the committed profile so closed.
func CloseUserDatabase(rules []ArgRule, allowed func(string) bool) (add []string, out []ArgRule) {
	for _, n := range UserDatabaseCalls {
		if !allowed(n) {
			add = append(add, n)
		}
	}
	return add, widenArgRules(rules, add, userDatabaseArgs)
}

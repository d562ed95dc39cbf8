package audit

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// The playbook's examples and one case per rule: the class and a word of the reason.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      Subject
		class  Class
		reason string
	}{
		// The playbook.
		{"updated language server", Subject{Kind: KindBinary, Access: "changed", Target: "$HOME/go/bin/gopls", Exe: "$HOME/go/bin/gopls", Role: RoleLanguageServer, Risk: policy.RiskHigh},
			Legitimate, "new version of a binary"},
		{"language server's new cache", Subject{Kind: KindFile, Access: "write", Target: "$HOME/.cache/gopls/v2/x", Exe: "/usr/bin/gopls", Role: RoleLanguageServer, Risk: policy.RiskLow},
			Legitimate, "cache or temp"},
		{"markdown linter loads an AWS SDK", Subject{Kind: KindFile, Access: "read", Target: "$WORKDIR/node_modules/@aws-sdk/client-s3/dist-cjs/index.js", Exe: "/usr/bin/node", Role: RoleLint, Risk: policy.RiskLow},
			Overbroad, "cloud SDK"},
		{"hook write", Subject{Kind: KindFile, Access: "write", Target: "$WORKDIR/.git/hooks/pre-commit", Exe: "/usr/bin/node", Role: RoleLint, Risk: policy.RiskCritical},
			Suspicious, "protected path $WORKDIR/.git"},
		{"hook write by git too", Subject{Kind: KindFile, Access: "create", Target: "$WORKDIR/.git/hooks/post-checkout", Exe: "/usr/bin/git", Role: RoleVCS, Risk: policy.RiskCritical},
			Suspicious, "protected path"},
		{"git writes its objects", Subject{Kind: KindFile, Access: "write", Target: "$WORKDIR/.git/objects/ab", Exe: "/usr/bin/git", Role: RoleVCS, Risk: policy.RiskCritical},
			Legitimate, "own repository"},
		{"bashrc append", Subject{Kind: KindFile, Access: "write", Target: "$HOME/.bashrc", Exe: "/usr/bin/sh", Role: RoleBuild},
			Suspicious, "protected path $HOME/.bashrc"},
		{"absolute home rc", Subject{Kind: KindFile, Access: "write", Target: "/home/alice/.zshrc", Exe: "/usr/bin/sh", Role: RoleBuild},
			Suspicious, "protected path"},
		{"ld.so.preload", Subject{Kind: KindFile, Access: "write", Target: "/etc/ld.so.preload", Exe: "/usr/bin/python3", Role: RoleInstall},
			Suspicious, "loader trick"},

		// Secrets.
		{"ssh key read", Subject{Kind: KindFile, Access: "read", Target: "$HOME/.ssh/id_ed25519", Exe: "/usr/bin/node", Role: RoleInstall},
			Suspicious, "credential store"},
		{"shadow read", Subject{Kind: KindFile, Access: "read", Target: "/etc/shadow", Exe: "/usr/bin/node", Role: RoleBuild},
			Suspicious, "secret read"},
		{"dotenv read", Subject{Kind: KindFile, Access: "read", Target: "$WORKDIR/.env", Exe: "/usr/bin/node", Role: RoleTest},
			Suspicious, "credential store"},
		{"stand-in sent elsewhere", Subject{Kind: KindNetwork, Access: "connect", Target: "collect.example.net:443", What: "stand-in credential NPM_TOKEN sent to collect.example.net:443", Exe: "/usr/bin/node", Role: RoleInstall},
			Suspicious, "stand-in"},

		// Network.
		{"raw address", Subject{Kind: KindNetwork, Access: "connect", Target: "203.0.113.7:443", Proto: "tcp", Exe: "/usr/bin/curl", Role: RoleInstall},
			Suspicious, "raw address"},
		{"metadata service", Subject{Kind: KindNetwork, Access: "connect", Target: "169.254.169.254:80", Exe: "/usr/bin/python3", Role: RoleBuild},
			Suspicious, "metadata"},
		{"raw loopback, not a test", Subject{Kind: KindNetwork, Access: "connect", Target: "127.0.0.1:6379", Exe: "/usr/bin/node", Role: RoleFormat},
			Suspicious, "loopback"},
		{"a test phones home on loopback", Subject{Kind: KindNetwork, Access: "connect", Target: "127.0.0.1:8080", Exe: "/usr/bin/go", Role: RoleTest},
			Suspicious, "loopback"},
		{"registry mirror", Subject{Kind: KindNetwork, Access: "connect", Target: "mirror.pkgs.example.org:443", Host: "mirror.pkgs.example.org", Exe: "/usr/bin/npm", Role: RoleInstall, KnownHosts: []string{"registry.pkgs.example.org:443"}},
			Legitimate, "same ecosystem"},
		{"mirror of a known host for a build", Subject{Kind: KindNetwork, Access: "connect", Target: "proxy.example.net:8443", Exe: "/usr/bin/go", Role: RoleBuild, Risk: policy.RiskCritical, KnownHosts: []string{"proxy.example.org:443"}},
			Legitimate, "same ecosystem"},
		{"installer fetches", Subject{Kind: KindNetwork, Access: "connect", Target: "files.example.com:443", Exe: "/usr/bin/pip", Role: RoleInstall, Risk: policy.RiskHigh},
			Legitimate, "installer"},
		{"formatter connects out", Subject{Kind: KindNetwork, Access: "connect", Target: "telemetry.example.com:443", Exe: "/usr/bin/prettier", Role: RoleFormat, Risk: policy.RiskHigh},
			Overbroad, "connects out"},
		{"linter to a mirror is still out", Subject{Kind: KindNetwork, Access: "connect", Target: "b.example.com:443", Exe: "/usr/bin/node", Role: RoleLint, KnownHosts: []string{"a.example.com:443"}},
			Overbroad, "connects out"},
		{"unknown role, new host", Subject{Kind: KindNetwork, Access: "connect", Target: "api.example.com:8443", Exe: "/usr/bin/x", Role: RoleOther, Risk: policy.RiskCritical},
			Overbroad, "not explained"},

		// Exec.
		{"exec from /tmp by a linter", Subject{Kind: KindFile, Access: "exec", Target: "/tmp/x/payload", Exe: "/usr/bin/node", Role: RoleLint},
			Suspicious, "exec of a written file"},
		{"exec from /dev/shm by an installer", Subject{Kind: KindFile, Access: "exec", Target: "/dev/shm/a", Exe: "/usr/bin/sh", Role: RoleInstall},
			Suspicious, "written file"},
		{"go test runs its test binary", Subject{Kind: KindFile, Access: "exec", Target: "$TMPDIR/go-build123/b001/x.test", Exe: "/usr/local/go/bin/go", Role: RoleTest},
			Legitimate, "cache or temp"},
		{"ld.so run directly", Subject{Kind: KindFile, Access: "exec", Target: "/usr/lib64/ld-linux-x86-64.so.2", Exe: "/usr/bin/node", Role: RoleBuild},
			Suspicious, "loader trick"},
		{"formatter spawns a shell", Subject{Kind: KindFile, Access: "exec", Target: "/usr/bin/bash", Exe: "/usr/bin/black", Role: RoleFormat, Risk: policy.RiskHigh},
			Overbroad, "shell"},

		// Syscalls.
		{"ptrace", Subject{Kind: KindSyscall, Target: "ptrace", Exe: "/usr/bin/x", Role: RoleBuild},
			Suspicious, "loader trick"},
		{"mount", Subject{Kind: KindSyscall, Target: "mount", Exe: "/usr/bin/x", Role: RoleBuild},
			Suspicious, "privileged syscall"},
		{"user namespace", Subject{Kind: KindSyscall, Target: "unshare", What: "unshare(CLONE_NEWUSER)", Exe: "/w/gen", Role: RoleBuild, Risk: policy.RiskCritical},
			Suspicious, "namespaces"},
		{"critical argument", Subject{Kind: KindSyscall, Target: "socket", What: "socket(AF_PACKET)", Exe: "/w/gen", Role: RoleBuild, Risk: policy.RiskCritical},
			Suspicious, "AF_PACKET"},
		{"formatter rewrites a sibling tree", Subject{Kind: KindFile, Access: "write", Target: "$HOME/src/sibling/notes.txt", Exe: "/w/tidy", Role: RoleFormat, Risk: policy.RiskHigh},
			Suspicious, "outside the project"},
		{"formatter writes its cache", Subject{Kind: KindFile, Access: "write", Target: "$HOME/.cache/black/x", Exe: "/usr/bin/black", Role: RoleFormat, Risk: policy.RiskLow},
			Legitimate, "cache"},
		{"linter writes npm's cache by its home path", Subject{Kind: KindFile, Access: "write", Target: "$HOME/.npm/_cacache/x", Exe: "/usr/bin/node", Role: RoleLint, Risk: policy.RiskLow},
			Legitimate, "cache"},
		{"runs a system program", Subject{Kind: KindFile, Access: "exec", Target: "/usr/bin/cat", Exe: "/usr/bin/dash", Role: RoleBuild, Risk: policy.RiskHigh},
			Legitimate, "system program"},
		{"harmless syscall", Subject{Kind: KindSyscall, Target: "getrandom", Exe: "/usr/bin/x", Role: RoleBuild, Risk: policy.RiskLow},
			Legitimate, "low risk"},

		// Reads.
		{"linter reads the home", Subject{Kind: KindFile, Access: "read", Target: "$HOME/Documents/notes.txt", Exe: "/usr/bin/node", Role: RoleLint, Risk: policy.RiskHigh},
			Overbroad, "outside the project"},
		{"linter reads the project", Subject{Kind: KindFile, Access: "read", Target: "$WORKDIR/docs/a.md", Exe: "/usr/bin/node", Role: RoleLint, Risk: policy.RiskLow},
			Legitimate, "formatter or linter"},
		{"build writes its output", Subject{Kind: KindFile, Access: "write", Target: "$WORKDIR/target/debug/x", Exe: "/usr/bin/cargo", Role: RoleBuild, Risk: policy.RiskLow},
			Legitimate, "outputs"},
		{"system file", Subject{Kind: KindFile, Access: "read", Target: "/usr/share/zoneinfo/UTC", Exe: "/usr/bin/x", Role: RoleFormat, Risk: policy.RiskLow},
			Legitimate, "system files"},
		{"build with a cloud SDK is its business", Subject{Kind: KindFile, Access: "read", Target: "$WORKDIR/node_modules/@aws-sdk/x.js", Exe: "/usr/bin/node", Role: RoleBuild, Risk: policy.RiskLow},
			Legitimate, "outputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, why := Classify(tc.s)
			if c != tc.class || !strings.Contains(why, tc.reason) {
				t.Errorf("Classify = %s (%s), want %s (…%s…)", c, why, tc.class, tc.reason)
			}
		})
	}
}

func TestGuessRole(t *testing.T) {
	for _, tc := range []struct {
		step    string
		command []string
		exes    []string
		want    string
	}{
		{"lint", []string{"npx", "markdownlint", "."}, nil, RoleLint},
		{"", []string{"npx", "markdownlint", "."}, nil, RoleLint},
		{"", []string{"cargo", "fmt"}, nil, RoleFormat},
		{"", []string{"go", "test", "./..."}, nil, RoleTest},
		{"", []string{"go", "vet", "./..."}, nil, RoleLint},
		{"", []string{"npm", "ci"}, nil, RoleInstall},
		{"", []string{"cargo", "build"}, nil, RoleBuild},
		{"", []string{"gopls", "serve"}, nil, RoleLanguageServer},
		{"", []string{"node", "server.js", "--stdio"}, nil, RoleLanguageServer},
		{"unit-tests", []string{"make"}, nil, RoleTest},
		{"", nil, []string{"/usr/bin/git"}, RoleVCS},
		{"", nil, []string{"/home/u/.local/bin/rust-analyzer-2026-11"}, RoleLanguageServer},
		{"", nil, []string{"/usr/bin/node"}, RoleOther},
	} {
		if got := GuessRole(tc.step, tc.command, tc.exes); got != tc.want {
			t.Errorf("GuessRole(%q, %q, %q) = %s, want %s", tc.step, tc.command, tc.exes, got, tc.want)
		}
	}
}

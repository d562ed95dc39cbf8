package synth

import (
	"slices"

	"github.com/sysprof/sysprof/policy"
)

// CredentialStores are the paths hidden in every synthesized profile, as portable patterns:
// policy.CredentialStores (the list `diff` and `show` rate as critical: home stores and the
// work tree's .env, .npmrc, .yarnrc.yml, .pypirc, .netrc) plus what synthesis adds. They hold keys, tokens and passwords that no build, formatter or package manager run
// under a learned profile needs; a user who disagrees names one with --allow-secret.
//
// The additions: .env files anywhere in the work tree (`**` matches any number of
// components), and a few more token files. TODO(lead): fold them into policy.CredentialStores
// once policy.PathCovers and the enforcer's hidden-path expansion understand `**`.
var CredentialStores = func() []string {
	out := slices.Clone(policy.CredentialStores)
	for _, extra := range []string{
		"$WORKDIR/**/.env",
		"$WORKDIR/**/.env.*",
		"$HOME/.gem/credentials",
		"$HOME/.m2/settings-security.xml",
		"$HOME/.pgpass",
		"$HOME/.terraform.d/credentials.tfrc.json",
	} {
		if !slices.Contains(out, extra) {
			out = append(out, extra)
		}
	}
	return out
}()

// sshAgentDefault is where ssh-agent puts its socket unless told otherwise; the trace's
// SSH_AUTH_SOCK, when known, is hidden too.
const sshAgentDefault = "$TMPDIR/ssh-*"

package synth

// CredentialStores are the paths hidden in every synthesized profile, as portable patterns.
// They hold keys, tokens and passwords that no build, formatter or package manager run under a
// learned profile needs to read; a user who disagrees names one with --allow-secret.
//
// TODO(lead): policy is growing policy.CredentialStores (the defaults the loader and `show`
// know about); when it lands, use it here and keep only the synth-specific additions (the
// ssh-agent socket comes from the trace context).
var CredentialStores = []string{
	"$HOME/.ssh",
	"$HOME/.gnupg",
	"$HOME/.aws",
	"$HOME/.azure",
	"$HOME/.config/gcloud",
	"$HOME/.kube",
	"$HOME/.docker/config.json",
	"$HOME/.netrc",
	"$HOME/.git-credentials",
	"$HOME/.config/git/credentials",
	"$HOME/.config/gh",
	"$HOME/.npmrc",
	"$HOME/.yarnrc.yml",
	"$HOME/.pypirc",
	"$HOME/.cargo/credentials",
	"$HOME/.cargo/credentials.toml",
	"$HOME/.gem/credentials",
	"$HOME/.m2/settings-security.xml",
	"$HOME/.pgpass",
	"$HOME/.vault-token",
	"$HOME/.terraform.d/credentials.tfrc.json",
	"$HOME/.password-store",
	"$HOME/.local/share/keyrings",
	"$WORKDIR/**/.env",
	"$WORKDIR/**/.env.*",
}

// sshAgentDefault is where ssh-agent puts its socket unless told otherwise; the trace's
// SSH_AUTH_SOCK, when known, is hidden too.
const sshAgentDefault = "$TMPDIR/ssh-*"

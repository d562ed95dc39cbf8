package paths

// credentialStores hold keys, tokens and passwords that no build, formatter or package manager
// needs. `**` matches any number of components (.env files anywhere in the work tree).
var credentialStores = []string{
	"$HOME/.ssh",
	"$HOME/.aws",
	"$HOME/.config/gcloud",
	"$HOME/.azure",
	"$HOME/.kube",
	"$HOME/.docker/config.json",
	"$HOME/.netrc",
	"$HOME/.git-credentials",
	"$HOME/.config/git/credentials",
	"$HOME/.config/gh",
	"$HOME/.npmrc",
	"$HOME/.yarnrc.yml",
	"$HOME/.pypirc",
	"$HOME/.config/pip/pip.conf", // an index URL's password (brokered: policy's pip store)
	"$HOME/.pip/pip.conf",
	"$HOME/.cargo/credentials*",
	"$CARGO_HOME/credentials*",
	"$HOME/.gnupg",
	"$HOME/.password-store",
	"$HOME/.local/share/keyrings",
	"$HOME/.vault-token",
	"$HOME/.gem/credentials",
	"$HOME/.m2/settings-security.xml",
	"$HOME/.pgpass",
	"$HOME/.terraform.d/credentials.tfrc.json",
	// Browser profiles (saved passwords, session cookies) and shell and REPL histories (a
	// token typed on a command line): the session's secrets, which no build reads.
	"$HOME/.mozilla",
	"$HOME/.config/google-chrome",
	"$HOME/.config/chromium",
	"$HOME/.config/BraveSoftware",
	"$HOME/.config/microsoft-edge",
	"$HOME/.bash_history",
	"$HOME/.zsh_history",
	"$HOME/.local/share/fish/fish_history",
	"$HOME/.python_history",
	"$HOME/.node_repl_history",
	"$HOME/.psql_history",
	"$HOME/.mysql_history",
	"$HOME/.sqlite_history",
	"$WORKDIR/.env",
	"$WORKDIR/.env.*",
	// Project-level package manager and netrc credentials (npm's _authToken, twine's password).
	"$WORKDIR/.npmrc",
	"$WORKDIR/.yarnrc.yml",
	"$WORKDIR/.pypirc",
	"$WORKDIR/.netrc",
	"$WORKDIR/**/.env",
	"$WORKDIR/**/.env.*",
}

// CredentialStores returns the credential stores as portable patterns: every synthesized
// profile hides them (even inside a broader read rule), Diff rates making one readable as
// critical, and refine refuses to allow one without --force. The caller may modify the
// returned slice.
func CredentialStores() []string { return append([]string(nil), credentialStores...) }

// CredentialStore returns the credential store p (a portable path or pattern) is or lies in,
// or "".
func CredentialStore(p string) string {
	for _, c := range credentialStores {
		if Covers(c, p) {
			return c
		}
	}
	return ""
}

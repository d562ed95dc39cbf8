package synth

// sshAgentDefault is where ssh-agent puts its socket unless told otherwise; the trace's
// SSH_AUTH_SOCK, when known, is hidden too. The credential stores themselves are
// paths.CredentialStores.
const sshAgentDefault = "$TMPDIR/ssh-*"

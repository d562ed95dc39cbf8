package policy

import "testing"

// ssh's client configuration is read by every ssh client (git over ssh too) and holds no
// secret: reading it is not critical, so learn does not leave it pending (denied on every
// run). The host keys beside it, and any rule wider than those exact files, stay critical.
func TestSSHClientConfigIsNoSystemSecret(t *testing.T) {
	for _, c := range []struct {
		access, path string
		critical     bool
	}{
		{"read", "/etc/ssh/ssh_config", false},
		{"list", "/etc/ssh/ssh_config.d", false},
		{"read", "/etc/ssh/ssh_config.d/20-systemd-ssh-proxy.conf", false},
		{"read", "/etc/ssh/ssh_known_hosts", false},
		{"read", "/etc/ssh/ssh_host_ed25519_key", true},
		{"read", "/etc/ssh", true},
		{"list", "/etc/ssh", true},
		{"read", "/etc/ssh/*", true},
		{"read", "/etc/ssh/ssh_config*", true},
		{"read", "/etc/ssh/ssh_config.d/*", true},
		{"write", "/etc/ssh/ssh_config", true},
		{"read", "/etc/ssh/ssh_config.d/../ssh_host_rsa_key", true},
	} {
		r, why := PathRisk(c.access, c.path, nil)
		if got := r == RiskCritical; got != c.critical {
			t.Errorf("%s %s: %s (%s), want critical %v", c.access, c.path, r, why, c.critical)
		}
	}
}

package netproxy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sysprof/sysprof/report"
)

// Credential is one brokered credential as the proxy holds it for a run: the command holds
// StandIn, the proxy puts Real in its header on connections to Hosts. It is never marshalled.
type Credential struct {
	Name    string   // what reports call it: its source ("$HOME/.npmrc //host/:_authToken")
	Hosts   []string // names, or name:port for that port only
	Header  string   // the header it travels in (Authorization, or the rule's own)
	Basic   bool     // Authorization: Basic base64(user:secret): the secret is the password
	By      string   // the binary it is brokered to ("" or "any": every binary)
	StandIn string   `json:"-"`
	Real    string   `json:"-"`
}

// forHost reports whether the credential goes to name on port.
func (c *Credential) forHost(name string, port uint16) bool {
	for _, h := range c.Hosts {
		n, p := h, ""
		if hn, hp, err := net.SplitHostPort(h); err == nil {
			n, p = hn, hp
		}
		n = canonName(n)
		if n == "localhost" && (name == "127.0.0.1" || name == "::1") {
			n = name // a loopback address rule: what localhost is inside
		}
		if n == name && (p == "" || p == strconv.Itoa(int(port))) {
			return true
		}
	}
	return false
}

// standInChars are what a stand-in is made of: letters and digits, like the tokens it replaces.
const standInChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewStandIn returns a random stand-in for real: as long as real (at least 32 characters), with
// real's well-known prefix kept (npm_, ghp_, glpat-) so that a client that checks the shape
// accepts it. It shares nothing else with real.
func NewStandIn(real string) (string, error) {
	prefix := ""
	if i := strings.IndexAny(real, "_-"); i > 0 && i <= 10 && strings.Trim(real[:i], standInChars) == "" {
		prefix = real[:i+1]
	}
	n := max(len(real), 32) - len(prefix)
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("stand-in: %w", err)
	}
	for i := range b {
		b[i] = standInChars[int(b[i])%len(standInChars)]
	}
	return prefix + string(b), nil
}

// Broker is a run's brokered credentials and the certificate authority the proxy terminates
// their names' TLS with. The CA's key exists only in this process's memory; its certificate
// (CAPEM) goes into the sandbox's trust. The CA is valid for caValidity from its creation.
type Broker struct {
	Creds []Credential
	// Roots verify the upstream servers: nil means the host's trust (x509.SystemCertPool,
	// which honours SSL_CERT_FILE and SSL_CERT_DIR).
	Roots *x509.CertPool
	CAPEM []byte

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	// sessions resume the proxy's TLS sessions with the upstreams: a registry's next
	// connection skips the certificate chain's verification and signature (it was verified
	// when the session was made, and Go checks its expiry again).
	sessions tls.ClientSessionCache
	mu       sync.Mutex
	leafs    map[string]*tls.Certificate
	uses     []CredentialUse
}

// CredentialUse is one request a brokered credential went out with (report's type).
type CredentialUse = report.CredentialUse

// caValidity bounds the run CA: long enough for a long build, short enough to be useless later.
const caValidity = 24 * time.Hour

// NewBroker makes the run's CA (ECDSA P-256, in memory only) for creds.
func NewBroker(creds []Credential) (*Broker, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("credential broker CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sysprof run CA " + serial.Text(36)[:8], Organization: []string{"sysprof (per-run, in memory)"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("credential broker CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Broker{Creds: creds, ca: ca, caKey: key, leafs: map[string]*tls.Certificate{}, sessions: tls.NewLRUClientSessionCache(256),
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// leaf returns the certificate the proxy shows the sandbox for name, signed by the run CA.
func (b *Broker) leaf(name string) (*tls.Certificate, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.leafs[name]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    b.ca.NotBefore,
		NotAfter:     b.ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(name); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.ca, &key.PublicKey, b.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	b.leafs[name] = c
	return c, nil
}

// credFor returns the credential brokered to name on port, nil when none.
func (b *Broker) credFor(name string, port uint16) *Credential {
	if b == nil {
		return nil
	}
	for i := range b.Creds {
		if b.Creds[i].forHost(name, port) {
			return &b.Creds[i]
		}
	}
	return nil
}

// standInIn returns the credential whose stand-in s holds (case-insensitively: DNS names and
// some encoders fold case), nil when none.
func (b *Broker) standInIn(s []byte) *Credential {
	if b == nil {
		return nil
	}
	for i := range b.Creds {
		c := &b.Creds[i]
		if bytes.Contains(s, []byte(c.StandIn)) || bytes.Contains(bytes.ToLower(s), []byte(strings.ToLower(c.StandIn))) {
			return c
		}
	}
	return nil
}

func (b *Broker) logUse(u CredentialUse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.uses) < 10*maxDistinct {
		b.uses = append(b.uses, u)
	}
}

// Uses returns every request a brokered credential went out with, in order.
func (b *Broker) Uses() []CredentialUse {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]CredentialUse(nil), b.uses...)
}

// errStandIn is a stand-in found where it must not be: the request is refused.
type errStandIn struct {
	c     *Credential
	where string
}

func (e errStandIn) Error() string {
	return fmt.Sprintf("the stand-in of %s in %s", e.c.Name, e.where)
}

// swap puts c's real value in place of its stand-in in the value v of its header; ok is false
// when v does not carry the stand-in the way c is presented.
func (c *Credential) swap(v string) (string, bool) {
	if !c.Basic {
		if !strings.Contains(v, c.StandIn) {
			return v, false
		}
		return strings.ReplaceAll(v, c.StandIn, c.Real), true
	}
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return v, false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return v, false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || pass != c.StandIn {
		return v, false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(user+":"+c.Real)), true
}

// errClientCert: the broker cannot carry an upstream that needs a client certificate.
var errClientCert = errors.New("the upstream asks for a client certificate: the proxy presents none (a credential rule cannot broker a host that needs one)")

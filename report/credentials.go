package report

import "time"

// CredentialUse is one request a brokered credential went out with (the egress proxy put its
// real value in the request): the access log of a credentials rule.
type CredentialUse struct {
	Time       time.Time `json:"time"`
	Credential string    `json:"credential"` // its source, never its value
	Binary     string    `json:"binary"`
	Method     string    `json:"method"`
	Host       string    `json:"host"` // host:port
	Path       string    `json:"path"`
	Status     int       `json:"status"`
	BytesOut   int64     `json:"bytesOut"`
	BytesIn    int64     `json:"bytesIn"`
	// Note says plainly what an upstream 401 or 403 means.
	Note string `json:"note,omitempty"`
}

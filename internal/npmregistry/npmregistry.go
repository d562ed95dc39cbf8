// Package npmregistry is a minimal npm registry for tests and `make bench`: packuments and
// tarballs of generated packages, each with a postinstall script that writes postinstall.txt,
// served over HTTP from a listener the caller gives (loopback).
package npmregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
)

// Postinstall is the install script of every package served.
const Postinstall = `node -e "require('fs').writeFileSync('postinstall.txt','ok')"`

// Serve serves version 1.0.0 of each named package on ln until ln closes, and returns the
// registry's base URL (ending in "/") and the server (Close it to stop).
func Serve(ln net.Listener, names []string, indexLines int) (string, *http.Server) {
	return ServeWith(ln, names, indexLines, Options{})
}

// Options are a registry's choices beyond its packages.
type Options struct {
	// Base is the URL the registry is reached at, without a trailing "/" (tarball URLs name
	// it); empty: http:// and ln's address. A TLS listener needs it (https://NAME).
	Base string
	// Token, when set, is required as "Authorization: Bearer TOKEN": anything else gets a
	// 401 with WWW-Authenticate, as a private registry answers.
	Token string
	// Seen, when set, gets each request's method, path and Authorization header.
	Seen func(method, path, auth string)
}

// ServeWith is Serve with Options.
func ServeWith(ln net.Listener, names []string, indexLines int, o Options) (string, *http.Server) {
	base := o.Base
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	files := map[string][]byte{}
	for _, name := range names {
		pkg, _ := json.Marshal(map[string]any{"name": name, "version": "1.0.0", "scripts": map[string]string{"postinstall": Postinstall}})
		tgz := tarball(map[string]string{"package/package.json": string(pkg), "package/index.js": strings.Repeat("module.exports = 1;\n", max(indexLines, 1))})
		s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
		path := "/" + name + "/-/" + name + "-1.0.0.tgz"
		files[path] = tgz
		files["/"+name], _ = json.Marshal(map[string]any{
			"name": name, "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{
				"name": name, "version": "1.0.0", "scripts": map[string]string{"postinstall": Postinstall},
				"dist": map[string]string{"tarball": base + path, "shasum": hex.EncodeToString(s1[:]),
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])},
			}},
		})
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Seen != nil {
			o.Seen(r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		if o.Token != "" && r.Header.Get("Authorization") != "Bearer "+o.Token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="npm"`)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if !strings.HasSuffix(r.URL.Path, ".tgz") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(b)
	})}
	go srv.Serve(ln)
	return base + "/", srv
}

func tarball(files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// Command npmregistry serves a fixed set of npm packages from loopback for `make bench`: N
// packages (probe-0 ... probe-N-1), each with an index.js and a postinstall script, as
// packuments and tarballs. It prints its base URL and serves until killed.
//
//	go run ./scripts/npmregistry -n 20 > url
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
)

func main() {
	n := flag.Int("n", 20, "packages to serve")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	docs, tarballs := map[string][]byte{}, map[string][]byte{}
	for i := range *n {
		name := fmt.Sprintf("probe-%d", i)
		script := `node -e "require('fs').writeFileSync('postinstall.txt','ok')"`
		pkg, _ := json.Marshal(map[string]any{"name": name, "version": "1.0.0", "scripts": map[string]string{"postinstall": script}})
		tgz := tarball(map[string]string{"package/package.json": string(pkg), "package/index.js": strings.Repeat("module.exports = 1;\n", 200)})
		s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
		path := "/" + name + "/-/" + name + "-1.0.0.tgz"
		tarballs[path] = tgz
		docs["/"+name], _ = json.Marshal(map[string]any{
			"name": name, "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{
				"name": name, "version": "1.0.0", "scripts": map[string]string{"postinstall": script},
				"dist": map[string]string{"tarball": base + path, "shasum": hex.EncodeToString(s1[:]),
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])},
			}},
		})
	}
	fmt.Println(base + "/")
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := docs[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		if b, ok := tarballs[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	})))
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

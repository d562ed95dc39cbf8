// gofetch prints the body of a URL fetched with Go's pure resolver (built CGO_ENABLED=0 -tags
// netgo): it reads /etc/hosts and /etc/resolv.conf itself, as a Go tool does (e2e names test).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	c := http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer r.Body.Close()
	io.Copy(os.Stdout, r.Body)
}

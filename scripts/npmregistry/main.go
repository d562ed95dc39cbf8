// Command npmregistry serves a fixed set of npm packages from loopback for `make bench`: N
// packages (probe-0 ... probe-N-1), each with an index.js and a postinstall script
// (internal/npmregistry). It prints its base URL and serves until killed.
//
//	go run ./scripts/npmregistry -n 20 > url
package main

import (
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/sysprof/sysprof/internal/npmregistry"
)

func main() {
	n := flag.Int("n", 20, "packages to serve")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for i := range *n {
		names = append(names, fmt.Sprintf("probe-%d", i))
	}
	url, _ := npmregistry.Serve(ln, names, 200)
	fmt.Println(url)
	select {}
}

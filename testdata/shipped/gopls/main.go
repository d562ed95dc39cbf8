// Command kvserve is the gopls shipped profile's fixture: a small module of two packages that
// imports net and net/http from the standard library (offline, no dependencies). gopls check
// main.go type-checks it and reports one analyzer diagnostic (printf) on purpose.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"example.com/kvserve/internal/store"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	s := store.New()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %d\n", ln.Addr().String())
	log.Fatal(http.Serve(ln, handler(s)))
}

func handler(s *store.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{key}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.Get(r.PathValue("key"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, v)
	})
	return mux
}

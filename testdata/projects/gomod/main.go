// Command gomod is a small offline fixture for learning and enforcing `go build` and `go test`.
package main

import (
	"fmt"
	"os"
	"strings"
)

func greeting(name string) string {
	return "hello, " + strings.TrimSpace(name)
}

func main() {
	name := "sysprof"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Println(greeting(name))
}

// closed writes which standard fds were closed when it started (stdiofds) into the file argv[1].
package main

import (
	"fmt"
	"os"

	"github.com/sysprof/sysprof/internal/stdiofds"
)

func main() {
	if err := os.WriteFile(os.Args[1], fmt.Appendf(nil, "%v", stdiofds.ClosedAtStart()), 0o644); err != nil {
		panic(err)
	}
}

// Command gen writes a synthetic month of run reports for `sysprof audit` (BENCHMARKS.md):
//
//	go run ./internal/auditcorpus/gen -out /tmp/corpus -reports 10000 -machines 50
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sysprof/sysprof/internal/auditcorpus"
)

func main() {
	out := flag.String("out", "", "directory to write the reports into (made if missing)")
	o := auditcorpus.Options{End: time.Now().UTC()}
	flag.IntVar(&o.Reports, "reports", 10000, "run reports")
	flag.IntVar(&o.Machines, "machines", 50, "machines (one subdirectory each)")
	flag.IntVar(&o.Projects, "projects", 20, "projects")
	flag.IntVar(&o.Days, "days", 30, "days the reports span, ending now")
	flag.Uint64Var(&o.Seed, "seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -out DIR is required")
		os.Exit(2)
	}
	planted, err := auditcorpus.Generate(*out, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d reports in %s; planted: %d overbroad, %d suspicious\n", o.Reports, *out, planted["overbroad"], planted["suspicious"])
}

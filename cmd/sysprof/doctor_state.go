package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// checkKeptState names the doctor row that lists what sysprof keeps on the host between runs.
const checkKeptState = "kept state"

// keptState reports what learn and enforce keep between runs in dirs (pinned guard programs,
// CO-RE fixups, warm slots): informational, it is rebuilt by the next run when removed.
func keptState(dirs ...string) hostcheck.Check {
	c := hostcheck.Check{Name: checkKeptState, For: hostcheck.ForBoth, Status: hostcheck.Available, Optional: true}
	var found, unreadable []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		switch {
		case os.IsNotExist(err):
		case err != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s: %v", d, err))
		default:
			found = append(found, fmt.Sprintf("%s: %d entr%s", d, len(entries), map[bool]string{true: "y", false: "ies"}[len(entries) == 1]))
		}
	}
	switch {
	case len(found) == 0 && len(unreadable) == 0:
		c.Detail = "nothing kept yet (the first run as root verifies and keeps the eBPF programs)"
	default:
		c.Detail = strings.Join(append(found, unreadable...), "; ")
		c.Remedy = "nothing needed: kept until reboot or the next sysprof build; `rm -rf " + strings.Join(dirs, " ") + "` frees it (the next run rebuilds it)"
	}
	if len(unreadable) > 0 {
		c.Status = hostcheck.Unknown
		c.Reason = "run as root to see it"
	}
	return c
}

// hostState is keptState of the directories learn and enforce use on this host.
func hostState() hostcheck.Check { return keptState(enforcer.PinRoot(), kernrun.CoreFixupDir) }

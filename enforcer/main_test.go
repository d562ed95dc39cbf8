package enforcer

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary be its own init stage (Run re-executes /proc/self/exe), and
// TestEnforceAsOrdinaryUser's and pidns_test.go's helpers when they run the binary as nobody.
func TestMain(m *testing.M) {
	MaybeInit()
	if os.Getenv("SYSPROF_STATE_DIR") == "" {
		// The runs' changesets of the tests: never the user's; shared with the helpers that
		// run as nobody (sticky, like /tmp).
		d, err := os.MkdirTemp("", "sysprof-enforcer-state-")
		if err == nil {
			_ = os.Chmod(d, 0o1777)
			os.Setenv("SYSPROF_STATE_DIR", d)
			code := testMain(m)
			os.RemoveAll(d)
			os.Exit(code)
		}
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if n := os.Getenv(addfdChildEnv); n != "" {
		os.Exit(addfdChild(n))
	}
	if victim := os.Getenv(unprivEnv); victim != "" {
		helper := unprivilegedHelper
		if os.Getenv(emptyFSEnv) != "" {
			helper = func(v string) error { return emptyFSCheck(v, os.Getenv("SYSPROF_TEST_WORK"), os.Getenv("HOME")) }
		}
		if err := helper(victim); err != nil {
			fmt.Fprintln(os.Stderr, "unprivileged helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(unprivSecretsEnv); dir != "" {
		if err := secretsChecks(dir); err != nil {
			fmt.Fprintln(os.Stderr, "unprivileged secrets checks:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(unprivPrivateShmEnv); dir != "" {
		if err := privateShmChecks(dir); err != nil {
			fmt.Fprintln(os.Stderr, "unprivileged private /dev/shm checks:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(unprivLoaderEnv); dir != "" {
		if err := loaderEnvChecks(dir); err != nil {
			fmt.Fprintln(os.Stderr, "unprivileged loader variable checks:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if ports := os.Getenv(egressEnv); ports != "" {
		if err := egressHelper(ports); err != nil {
			fmt.Fprintln(os.Stderr, "egress helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if rel := os.Getenv(sockDaemonEnv); rel != "" {
		sockDaemon(rel)
		os.Exit(0)
	}
	if args := os.Getenv(sockCheckEnv); args != "" {
		if err := hostSocketsCheck(strings.Split(args, "\n")); err != nil {
			fmt.Fprintln(os.Stderr, "host sockets as nobody:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(binCheckEnv); dir != "" {
		if err := binariesCheck(dir); err != nil {
			fmt.Fprintln(os.Stderr, "binaries as nobody:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if name := os.Getenv(nobodyEnv); name != "" {
		if err := nobodyHelpers[name](os.Getenv("SYSPROF_TEST_VICTIM"), os.Getenv("SYSPROF_TEST_WORK")); err != nil {
			fmt.Fprintf(os.Stderr, "%s (as nobody): %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	return m.Run()
}

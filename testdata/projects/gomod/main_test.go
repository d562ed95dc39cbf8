package main

import "testing"

func TestGreeting(t *testing.T) {
	if got := greeting(" gopher "); got != "hello, gopher" {
		t.Fatalf("greeting = %q", got)
	}
}

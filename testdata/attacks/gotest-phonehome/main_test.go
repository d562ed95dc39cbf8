package main

import "testing"

func TestSum(t *testing.T) {
	if got := sum(1, 2, 3); got != 6 {
		t.Fatalf("sum = %d", got)
	}
}

// Command phonehome is the fixture of the "test that phones home" attack: a tiny program with
// an ordinary unit test, and a test helper that is not ordinary (analytics_test.go).
package main

import "fmt"

func sum(xs ...int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func main() { fmt.Println(sum(1, 2, 3)) }

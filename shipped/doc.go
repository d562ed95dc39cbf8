// Package shipped holds tests only: it proves, as root, that the shipped profiles (profiles/)
// work on their fixtures (enforce with zero denials, drift with no widening) and that the
// attacks of the playbook (testdata/attacks/) are stopped and reported under a profile learned
// from each attack's benign twin.
//
// Run it as root: CI=true go test -count=1 ./shipped/ (without root the tests skip, and under
// CI=true they fail). Every run is hermetic: a temporary HOME per user with fake credentials,
// Go and Cargo caches inside it, offline toolchains, and a loopback "attacker" the test owns.
package shipped

// Package feature holds the one sentinel every package wraps when this host (its kernel, or the
// kernel's configuration) lacks a feature: sandbox's and hostcheck's ErrNotSupported are this
// value, so errors.Is(err, X.ErrNotSupported) matches across packages. It imports nothing, so
// any package may use it without an import cycle.
package feature

import "errors"

// ErrNotSupported is matched (errors.Is) by every error that means "this host does not offer
// the feature", as opposed to a failure.
var ErrNotSupported = errors.New("not supported")

// Package store is an in-memory key-value store guarded by a mutex.
package store

import "sync"

// Store maps keys to values.
type Store struct {
	mu sync.Mutex
	m  map[string]string
}

// New returns an empty store.
func New() *Store { return &Store{m: map[string]string{}} }

// Get returns the value of key.
func (s *Store) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

// Put sets key to value.
func (s *Store) Put(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = value
}

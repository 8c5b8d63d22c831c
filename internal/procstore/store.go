package procstore

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// ID identifies a session: a random integer in [MinID, MaxID) (SPEC §4.3),
// never given to two live sessions.
type ID int

// The range of session ids.
const (
	MinID ID = 1000
	MaxID ID = 100000
)

// Entry is what a Store holds.
type Entry interface {
	// Exited reports whether the session's process has exited; exited
	// sessions are evicted first.
	Exited() bool
}

// Defaults of Options (SPEC §4.6, compat).
const (
	DefaultMax     = 64
	DefaultProtect = 8
)

// Options configures a Store; zero values mean the defaults.
type Options struct {
	Max     int // live sessions at most
	Protect int // the most recently used sessions never evicted
}

// Store is the table of live sessions.
type Store[T Entry] struct {
	max, protect int

	mu    sync.Mutex
	items map[ID]*item[T] // guarded by mu
	clock uint64          // guarded by mu: logical time of the last use
}

type item[T Entry] struct {
	v    T
	used uint64 // the store's clock when last used
}

// New returns an empty store.
func New[T Entry](opts Options) *Store[T] {
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Protect <= 0 {
		opts.Protect = DefaultProtect
	}
	// A store smaller than the protected set must still evict.
	opts.Protect = min(opts.Protect, opts.Max-1)
	return &Store[T]{max: opts.Max, protect: opts.Protect, items: map[ID]*item[T]{}}
}

// Max returns the capacity.
func (s *Store[T]) Max() int { return s.max }

// Insert adds v under a new random id, as most recently used. When the
// store is full it first removes the entry [Prune] chooses and returns it
// (evicted is true): the caller must stop it. n is the number of entries
// after the insertion.
func (s *Store[T]) Insert(v T) (id ID, victim T, evicted bool, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) >= s.max {
		if vid, ok := Prune(s.metas(), s.protect); ok {
			victim, evicted = s.items[vid].v, true
			delete(s.items, vid)
		}
	}
	for {
		id = MinID + ID(rand.IntN(int(MaxID-MinID)))
		if _, taken := s.items[id]; !taken {
			break
		}
	}
	s.clock++
	s.items[id] = &item[T]{v: v, used: s.clock}
	return id, victim, evicted, len(s.items)
}

// Get returns the entry with id and marks it used.
func (s *Store[T]) Get(id ID) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	if !ok {
		var zero T
		return zero, false
	}
	s.clock++
	it.used = s.clock
	return it.v, true
}

// Remove removes the entry with id and returns it.
func (s *Store[T]) Remove(id ID) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	if !ok {
		var zero T
		return zero, false
	}
	delete(s.items, id)
	return it.v, true
}

// RemoveIf removes the entry with id only if it is v, and reports whether
// it did: a caller holding an entry whose id was reused after an eviction
// must not remove the newcomer.
func (s *Store[T]) RemoveIf(id ID, v T, same func(a, b T) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	if !ok || !same(it.v, v) {
		return false
	}
	delete(s.items, id)
	return true
}

// Len returns the number of entries.
func (s *Store[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// All returns the entries, leaving them in the store.
func (s *Store[T]) All() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]T, 0, len(s.items))
	for _, it := range s.items {
		all = append(all, it.v)
	}
	return all
}

// RemoveAll empties the store and returns what it held.
func (s *Store[T]) RemoveAll() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]T, 0, len(s.items))
	for id, it := range s.items {
		all = append(all, it.v)
		delete(s.items, id)
	}
	return all
}

func (s *Store[T]) metas() []Meta {
	metas := make([]Meta, 0, len(s.items))
	for id, it := range s.items {
		metas = append(metas, Meta{ID: id, Used: it.used, Exited: it.v.Exited()})
	}
	return metas
}

// Meta is what Prune knows of an entry.
type Meta struct {
	ID     ID
	Used   uint64 // larger is more recent
	Exited bool
}

// Prune chooses the entry to evict (SPEC §4.6, compat): among the entries
// other than the protect most recently used, the least recently used one
// that has exited, else the least recently used one. It reports false when
// every entry is protected.
func Prune(metas []Meta, protect int) (ID, bool) {
	byRecency := slices.Clone(metas)
	slices.SortFunc(byRecency, func(a, b Meta) int { // most recent first
		switch {
		case a.Used > b.Used:
			return -1
		case a.Used < b.Used:
			return 1
		}
		return 0
	})
	if len(byRecency) <= protect {
		return 0, false
	}
	candidates := byRecency[protect:]
	for i := len(candidates) - 1; i >= 0; i-- { // oldest first
		if candidates[i].Exited {
			return candidates[i].ID, true
		}
	}
	return candidates[len(candidates)-1].ID, true
}

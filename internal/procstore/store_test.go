package procstore

import (
	"testing"
)

// COMPAT-CASES §17.3: ids 1..10 last used 40, 30, 20, 19, ..., 13 seconds
// ago, the 8 most recent protected.
func TestPruneCompat(t *testing.T) {
	ages := []int{40, 30, 20, 19, 18, 17, 16, 15, 14, 13}
	metas := func(exited ...ID) []Meta {
		var m []Meta
		for i, age := range ages {
			id := ID(i + 1)
			m = append(m, Meta{ID: id, Used: uint64(1000 - age), Exited: contains(exited, id)})
		}
		return m
	}
	tests := []struct {
		name   string
		exited []ID
		want   ID
	}{
		{"only #2 exited", []ID{2}, 2},
		{"none exited", nil, 1},
		{"#3 and #10 exited but protected", []ID{3, 10}, 1},
		{"#1 and #2 exited", []ID{1, 2}, 1},
	}
	for _, tt := range tests {
		if got, ok := Prune(metas(tt.exited...), 8); !ok || got != tt.want {
			t.Errorf("%s: pruned %d (%v), want %d", tt.name, got, ok, tt.want)
		}
	}
	if _, ok := Prune(metas()[:8], 8); ok {
		t.Error("with 8 entries all are protected")
	}
}

func contains(ids []ID, id ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

type fake struct {
	name   string
	exited bool
}

func (f *fake) Exited() bool { return f.exited }

func TestStore(t *testing.T) {
	s := New[*fake](Options{Max: 4, Protect: 2})
	ids := map[string]ID{}
	for _, name := range []string{"a", "b", "c", "d"} {
		id, _, evicted, n := s.Insert(&fake{name: name})
		if evicted || id < MinID || id >= MaxID {
			t.Fatalf("insert %s: id %d evicted %v", name, id, evicted)
		}
		if _, dup := ids[name]; dup {
			t.Fatal("duplicate")
		}
		ids[name] = id
		if n != len(ids) {
			t.Fatalf("n = %d", n)
		}
	}
	s.Get(ids["a"]) // a is now the most recent: protected with d
	_, victim, evicted, n := s.Insert(&fake{name: "e"})
	if !evicted || victim.name != "b" || n != 4 {
		t.Fatalf("evicted %v %+v, n %d; want b (least recently used, unprotected)", evicted, victim, n)
	}
	if _, ok := s.Get(ids["b"]); ok {
		t.Fatal("b still in the store")
	}
	got, _ := s.Get(ids["c"])
	got.exited = true
	s.Get(ids["a"])
	s.Get(ids["d"])
	if _, victim, _, _ := s.Insert(&fake{name: "f"}); victim.name != "c" {
		t.Fatalf("evicted %s, want the exited c", victim.name)
	}
	if v, ok := s.Remove(ids["a"]); !ok || v.name != "a" || s.Len() != 3 {
		t.Fatal("Remove")
	}
	if all := s.RemoveAll(); len(all) != 3 || s.Len() != 0 {
		t.Fatalf("RemoveAll = %d", len(all))
	}
}

func TestSmallStoresStillEvict(t *testing.T) {
	s := New[*fake](Options{Max: 2})
	s.Insert(&fake{name: "a"})
	s.Insert(&fake{name: "b"})
	if _, victim, evicted, n := s.Insert(&fake{name: "c"}); !evicted || victim.name != "a" || n != 2 {
		t.Fatalf("max 2: evicted %v %+v n %d", evicted, victim, n)
	}
}

func TestRemoveIf(t *testing.T) {
	s := New[*fake](Options{})
	a := &fake{name: "a"}
	id, _, _, _ := s.Insert(a)
	same := func(x, y *fake) bool { return x == y }
	if s.RemoveIf(id, &fake{name: "a"}, same) {
		t.Fatal("removed another entry under the same id")
	}
	if !s.RemoveIf(id, a, same) || s.Len() != 0 {
		t.Fatal("RemoveIf of the entry itself")
	}
}

func TestIDsAreNeverSharedByLiveSessions(t *testing.T) {
	s := New[*fake](Options{Max: 50000})
	seen := map[ID]bool{}
	for range 50000 {
		id, _, _, _ := s.Insert(&fake{})
		if seen[id] {
			t.Fatalf("id %d given twice", id)
		}
		seen[id] = true
	}
}

package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// COMPAT §17.7 case 42, and what the amended file then allows.
func TestAmend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules", "default.rules")
	for range 2 {
		if _, err := Amend(path, []string{"python3"}); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "prefix_rule(pattern=[\"python3\"], decision=\"allow\")\n" {
		t.Errorf("file = %q", b)
	}
	// A file without a final newline, and tokens that need escaping.
	if err := os.WriteFile(path, []byte(`prefix_rule(pattern=["ls"])`), 0o644); err != nil {
		t.Fatal(err)
	}
	tricky := []string{"echo", `a "quoted" <b> \ & ü`}
	r, err := Amend(path, tricky)
	if err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(path)
	if err != nil {
		t.Fatalf("the amended file does not load: %v", err)
	}
	rs := NewRules(f)
	if got := rs.CheckArgv(append(tricky, "x")); got.Decision == nil || *got.Decision != Allow {
		t.Errorf("amended file: %+v", got)
	}
	if _, ok := r.match(tricky); !ok {
		t.Error("the returned rule does not match its prefix")
	}
}

// Concurrent amendments neither interleave nor duplicate.
func TestAmendConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "default.rules")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := Amend(path, []string{"tool", string(rune('a' + i%5))}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 5 {
		t.Errorf("%d rules, want 5", len(f.Rules))
	}
}

func TestCheckArgvJSON(t *testing.T) {
	rs := NewRules(mustParse(t, "prefix_rule(pattern=[\"git\"], decision=\"prompt\", justification=\"ask first\")\nprefix_rule(pattern=[\"git\",\"commit\"], decision=\"forbidden\")"))
	tests := map[string]string{
		"git commit -m hi": `{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git"],"decision":"prompt","justification":"ask first"}},{"prefixRuleMatch":{"matchedPrefix":["git","commit"],"decision":"forbidden"}}],"decision":"forbidden"}`,
		"ls":               `{"matchedRules":[]}`,
	}
	for argv, want := range tests {
		b, err := json.Marshal(rs.CheckArgv(words(argv)))
		if err != nil || string(b) != want {
			t.Errorf("%s: %s, %v; want %s", argv, b, err, want)
		}
	}
}

package orchestrator

import (
	"slices"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/root", "API_KEY=k", "SECRET_TOKEN=s", "FOO=bar", "lower_key=x", "NOEQUALS"}
	tests := []struct {
		name   string
		base   []string
		policy EnvPolicy
		want   []string
	}{
		{"default drops credentials", parent, EnvPolicy{},
			[]string{"FOO=bar", "HOME=/root", "PATH=/bin"}},
		{"ignore default excludes keeps all", parent, EnvPolicy{IgnoreDefaultExcludes: true},
			[]string{"API_KEY=k", "FOO=bar", "HOME=/root", "PATH=/bin", "SECRET_TOKEN=s", "lower_key=x"}},
		{"include_only", []string{"PATH=/bin", "FOO=1"}, EnvPolicy{IncludeOnly: []string{"*PATH"}},
			[]string{"PATH=/bin"}},
		{"set adds", []string{"PATH=/bin"}, EnvPolicy{Set: map[string]string{"NEW_VAR": "42"}},
			[]string{"NEW_VAR=42", "PATH=/bin"}},
		{"set overrides", []string{"PATH=/bin"}, EnvPolicy{Set: map[string]string{"PATH": "/x"}},
			[]string{"PATH=/x"}},
		{"core", append(parent, "USER=me", "TMPDIR=/tmp", "EDITOR=vi"), EnvPolicy{Inherit: InheritCore},
			[]string{"HOME=/root", "PATH=/bin", "TMPDIR=/tmp", "USER=me"}},
		{"none with set", parent, EnvPolicy{Inherit: InheritNone, Set: map[string]string{"A": "1"}},
			[]string{"A=1"}},
		{"exclude globs are case-insensitive", parent, EnvPolicy{Exclude: []string{"f?o", "h*"}},
			[]string{"PATH=/bin"}},
		{"set then include_only drops unmatched set", []string{"PATH=/bin"},
			EnvPolicy{Set: map[string]string{"A": "1"}, IncludeOnly: []string{"PATH"}}, []string{"PATH=/bin"}},
		{"set survives default excludes", nil, EnvPolicy{Set: map[string]string{"MY_TOKEN": "t"}},
			[]string{"MY_TOKEN=t"}},
		{"later duplicate wins", []string{"A=1", "A=2"}, EnvPolicy{}, []string{"A=2"}},
		{"value with equals", []string{"A=b=c"}, EnvPolicy{}, []string{"A=b=c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BuildEnv(tt.base, tt.policy); !slices.Equal(got, tt.want) {
				t.Errorf("BuildEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*KEY*", "API_KEY", true}, {"*KEY*", "KEY", true}, {"*KEY*", "KEYS_X", true}, {"*KEY*", "KE", false},
		{"?", "A", true}, {"?", "", false}, {"?", "AB", false}, {"A?C", "ABC", true},
		{"*", "", true}, {"", "", true}, {"", "A", false}, {"**", "x", true},
		{"A*B*C", "AXXBYYC", true}, {"A*B*C", "AXXBYY", false}, {"*AB", "AAB", true},
		{"[A]", "[A]", true}, {"[A]", "A", false}, {`\*`, `\X`, true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

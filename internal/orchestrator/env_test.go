package orchestrator

import (
	"slices"
	"strings"
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

// The default excludes of SPEC §10: each name or value here is dropped,
// each of keep stays.
func TestDefaultExcludes(t *testing.T) {
	drop := []string{
		"API_KEY=k", "SECRET_TOKEN=s", "lower_key=x", "DB_PASSWORD=p", "MYSQL_PWD=p", "PGPASSWD=p",
		"AWS_CREDENTIALS_FILE=f", "GOOGLE_APPLICATION_CREDENTIALS=f", "SSH_PRIVATE=x", "GITHUB_PAT=ghp",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "GPG_AGENT_INFO=/run/gpg:0:1",
		"DATABASE_URL=postgres://app:hunter2@db:5432/app", "PIP_EXTRA_INDEX_URL=https://a.example/simple https://u:p@b.example/simple",
		"REMOTE=https://:ghp_x@github.com/o/r", "MIRROR=ftp://u:@h/",
		"BW_SESSION=s", "OP_SESSION_my=s", "SMTP_PASS=p", "REDIS_PWD=p", "NPM_CONFIG__AUTH=a", "DOCKER_AUTH_CONFIG={}",
		"DSN=root:pw@tcp(db)/x", "DSNS=a b user:pw@host",
	}
	keep := []string{
		"PWD=/w", "OLDPWD=/", "PATH=/bin", "HOME=/root", "GIT_REMOTE=ssh://git@github.com/o/r", "PROXY=http://proxy:3128",
		"DOCS=https://example.com/a:b@c", "PADS=1", "GIT_AUTHOR_NAME=a", "IMAGE=docker.io/library/x:1@sha256:ab",
		"ORIGIN=git@github.com:o/r.git", "XAUTHORITY=/x",
	}
	base := append(append([]string{}, drop...), keep...)
	got := BuildEnv(base, EnvPolicy{})
	want := slices.Clone(keep)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("BuildEnv = %q\nwant %q", got, want)
	}
	var names []string
	for _, kv := range drop {
		names = append(names, kv[:strings.IndexByte(kv, '=')])
	}
	slices.Sort(names)
	if got := DroppedSecrets(base, EnvPolicy{}); !slices.Equal(got, names) {
		t.Errorf("DroppedSecrets = %q\nwant %q", got, names)
	}
	if got := DroppedSecrets(base, EnvPolicy{IgnoreDefaultExcludes: true}); got != nil {
		t.Errorf("DroppedSecrets with ignore_default_excludes = %q, want none", got)
	}
	if got := BuildEnv(base, EnvPolicy{IgnoreDefaultExcludes: true}); len(got) != len(base) {
		t.Errorf("ignore_default_excludes kept %d of %d variables", len(got), len(base))
	}
}

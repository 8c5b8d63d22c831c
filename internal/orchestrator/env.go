package orchestrator

import (
	"regexp"
	"slices"
	"strings"
)

// Inherit says which variables of execd's own environment a command starts
// from (SPEC §10).
type Inherit string

// The inherit choices.
const (
	InheritAll  Inherit = "all"
	InheritCore Inherit = "core"
	InheritNone Inherit = "none"
)

// coreVars are kept by InheritCore.
var coreVars = []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP"}

// defaultExcludes drop credentials unless IgnoreDefaultExcludes is set
// (SPEC §10): Codex's three patterns, names that hold passwords and
// personal access tokens, and the sockets of the agents that sign and
// authenticate for the user (a sandboxed command could use them without
// reading any secret).
var defaultExcludes = []string{"*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*",
	"*PRIVATE*", "MYSQL_PWD", "*_PWD", "*_PASS", "*_PAT", "*_AUTH", "*_AUTH_*", "BW_SESSION", "OP_SESSION_*",
	"SSH_AUTH_SOCK", "GPG_AGENT_INFO"}

// urlCredentials finds a URL with a password in its user information
// (postgres://user:pass@host, https://:token@host), wherever in a value
// (PIP_EXTRA_INDEX_URL may list several). A user alone (ssh://git@host)
// is not a secret.
// A data source name without a scheme (Go's MySQL driver:
// user:pass@tcp(host)/db) counts when it starts the value or a word.
var urlCredentials = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]*:[^/?#@\s]*@|(^|[\s,;])[^\s/:@,;]+:[^\s/@,;]+@`)

// secret reports whether the default excludes drop the variable.
func secret(name, value string) bool {
	return matchAny(defaultExcludes, name) || urlCredentials.MatchString(value)
}

// EnvPolicy builds a command's environment from execd's (SPEC §10). The
// zero value inherits everything except the default excludes.
type EnvPolicy struct {
	Inherit               Inherit // "" means InheritAll
	IgnoreDefaultExcludes bool
	Exclude               []string // case-insensitive globs with * and ?
	Set                   map[string]string
	IncludeOnly           []string // if non-empty, keep only matching names
}

// BuildEnv applies p to base ("KEY=VALUE" entries; a later duplicate
// wins) in the order of SPEC §10: inherit, default excludes, exclude, set,
// include_only. The result is sorted by name.
func BuildEnv(base []string, p EnvPolicy) []string {
	vars := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		switch p.Inherit {
		case InheritNone:
			continue
		case InheritCore:
			if !slices.Contains(coreVars, k) {
				continue
			}
		}
		vars[k] = v
	}
	drop := func(patterns []string) {
		for k := range vars {
			if matchAny(patterns, k) {
				delete(vars, k)
			}
		}
	}
	if !p.IgnoreDefaultExcludes {
		for k, v := range vars {
			if secret(k, v) {
				delete(vars, k)
			}
		}
	}
	drop(p.Exclude)
	for k, v := range p.Set {
		vars[k] = v
	}
	if len(p.IncludeOnly) > 0 {
		for k := range vars {
			if !matchAny(p.IncludeOnly, k) {
				delete(vars, k)
			}
		}
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// Keeps reports whether p lets commands have the variable name=value
// that a login profile exported (SPEC §9.1): the default excludes,
// exclude and include_only apply as to an inherited one; inherit does
// not, since the variable is not inherited.
func (p EnvPolicy) Keeps(name, value string) bool {
	switch {
	case !p.IgnoreDefaultExcludes && secret(name, value), matchAny(p.Exclude, name):
		return false
	}
	return len(p.IncludeOnly) == 0 || matchAny(p.IncludeOnly, name)
}

// DroppedSecrets returns the names of base (sorted) that the default
// excludes drop under p, for execd doctor; none when p ignores them.
func DroppedSecrets(base []string, p EnvPolicy) []string {
	if p.IgnoreDefaultExcludes {
		return nil
	}
	inherited := BuildEnv(base, EnvPolicy{Inherit: p.Inherit, IgnoreDefaultExcludes: true})
	var names []string
	for _, kv := range inherited {
		if k, v, _ := strings.Cut(kv, "="); secret(k, v) {
			names = append(names, k)
		}
	}
	return names
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if globMatch(strings.ToUpper(p), strings.ToUpper(name)) {
			return true
		}
	}
	return false
}

// globMatch matches name against pattern, where * matches any run of
// characters and ? any one character; nothing else is special.
func globMatch(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	star, mark := -1, 0 // last * in p, and the position in n it matched up to
	for i, j := 0, 0; j < len(n); {
		switch {
		case i < len(p) && (p[i] == '?' || p[i] == n[j]):
			i, j = i+1, j+1
		case i < len(p) && p[i] == '*':
			star, mark = i, j
			i++
		case star >= 0:
			mark++
			i, j = star+1, mark
		default:
			return false
		}
		if j == len(n) {
			for i < len(p) && p[i] == '*' {
				i++
			}
			return i == len(p)
		}
	}
	for _, r := range p {
		if r != '*' {
			return false
		}
	}
	return true
}

// lookupEnv returns the value of key in env ("KEY=VALUE" entries).
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

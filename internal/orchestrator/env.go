package orchestrator

import (
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

// defaultExcludes drop credentials unless IgnoreDefaultExcludes is set.
var defaultExcludes = []string{"*KEY*", "*SECRET*", "*TOKEN*"}

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
		drop(defaultExcludes)
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

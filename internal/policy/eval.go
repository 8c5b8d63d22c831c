package policy

import "sync"

// Rules is the set of prefix rules in force, in the order they were
// loaded. The zero value has none. It is safe for concurrent use: an
// amendment (Add) takes effect for every later check.
type Rules struct {
	mu    sync.RWMutex
	rules []*Rule
}

// NewRules returns the rules of files, in order.
func NewRules(files ...*File) *Rules {
	rs := &Rules{}
	for _, f := range files {
		rs.rules = append(rs.rules, f.Rules...)
	}
	return rs
}

// strict reports whether any rule forbids or asks.
func (rs *Rules) strict() bool {
	if rs == nil {
		return false
	}
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	for _, r := range rs.rules {
		if r.Decision >= Prompt {
			return true
		}
	}
	return false
}

// Add puts r in force.
func (rs *Rules) Add(r *Rule) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.rules = append(rs.rules, r)
}

// Match is one verdict on one command: a rule's (Prefix is what it
// matched) or, when no rule matched the command, the built-in knowledge's
// (Heuristic; Command is the whole command).
type Match struct {
	Prefix        []string
	Command       []string
	Decision      Decision
	Justification string
	Heuristic     bool
}

// Evaluation is the verdict on a call: the strictest of its matches.
// Decision is 0 when nothing matched.
type Evaluation struct {
	Decision Decision
	Matches  []Match
}

// Check returns every rule that matches argv, in load order.
func (rs *Rules) Check(argv []string) []Match {
	if rs == nil {
		return nil
	}
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	var out []Match
	for _, r := range rs.rules {
		if prefix, ok := r.match(argv); ok {
			out = append(out, Match{Prefix: prefix, Command: argv, Decision: r.Decision, Justification: r.Justification})
		}
	}
	return out
}

// Evaluate checks each command against the rules; a command no rule
// matches gets fallback's decision, if fallback is not nil. The strictest
// decision wins (SPEC §7.3).
func (rs *Rules) Evaluate(cmds [][]string, fallback func([]string) Decision) Evaluation {
	var ev Evaluation
	for _, c := range cmds {
		ms := rs.Check(c)
		if len(ms) == 0 && fallback != nil {
			ms = []Match{{Command: c, Decision: fallback(c), Heuristic: true}}
		}
		ev.Matches = append(ev.Matches, ms...)
	}
	for _, m := range ev.Matches {
		ev.Decision = max(ev.Decision, m.Decision)
	}
	return ev
}

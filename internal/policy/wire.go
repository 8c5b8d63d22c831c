package policy

// CheckResult is what `execd check` prints (SPEC §7.4), field for field
// what `codex execpolicy check` prints: every rule that matched, and the
// strictest decision, absent when none matched.
type CheckResult struct {
	MatchedRules []RuleMatch `json:"matchedRules"`
	Decision     *Decision   `json:"decision,omitempty"`
}

// RuleMatch is one matched rule in a CheckResult.
type RuleMatch struct {
	PrefixRuleMatch PrefixRuleMatch `json:"prefixRuleMatch"`
}

// PrefixRuleMatch is the prefix a rule matched and its verdict.
type PrefixRuleMatch struct {
	MatchedPrefix []string `json:"matchedPrefix"`
	Decision      Decision `json:"decision"`
	Justification string   `json:"justification,omitempty"`
}

// CheckArgv evaluates argv exactly as given against the rules only: no
// script splitting, no built-in knowledge (SPEC §7.4).
func (rs *Rules) CheckArgv(argv []string) CheckResult {
	ev := rs.Evaluate([][]string{argv}, nil)
	res := CheckResult{MatchedRules: []RuleMatch{}}
	for _, m := range ev.Matches {
		res.MatchedRules = append(res.MatchedRules, RuleMatch{PrefixRuleMatch{m.Prefix, m.Decision, m.Justification}})
	}
	if ev.Decision != 0 {
		res.Decision = &ev.Decision
	}
	return res
}

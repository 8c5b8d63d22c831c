package policy

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Decision is a verdict on a command; a larger one is stricter.
type Decision int

// The decisions, from the least strict.
const (
	Allow Decision = iota + 1
	Prompt
	Forbidden
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Prompt:
		return "prompt"
	case Forbidden:
		return "forbidden"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// MarshalText writes the decision's name, as rules files spell it.
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Rule is a prefix_rule: it matches an argv that starts with its pattern,
// each position of which lists the tokens accepted there.
type Rule struct {
	Pattern       [][]string
	Decision      Decision
	Justification string
}

// match returns the prefix of argv the rule matches.
func (r *Rule) match(argv []string) ([]string, bool) {
	if len(argv) < len(r.Pattern) {
		return nil, false
	}
	for i, alts := range r.Pattern {
		if !slices.Contains(alts, argv[i]) {
			return nil, false
		}
	}
	return slices.Clone(argv[:len(r.Pattern)]), true
}

// NetworkRule is a network_rule. execd parses and validates them for
// compatibility but does not enforce them: its sandbox lets the network
// in or not at all.
type NetworkRule struct {
	Host, Protocol, Decision, Justification string
}

// File is what one rules file defines.
type File struct {
	Name            string
	Rules           []*Rule
	Network         []NetworkRule
	HostExecutables map[string][]string // name → paths; parsed, not used
}

// ParseFile evaluates a rules file (SPEC §7.3): Starlark with
// prefix_rule, network_rule and host_executable. An error names the file
// and the line of the call that failed; nothing of a file that fails is
// kept.
func ParseFile(name string, src []byte) (*File, error) {
	f := &File{Name: name, HostExecutables: map[string][]string{}}
	thread := &starlark.Thread{Name: name, Print: func(*starlark.Thread, string) {}}
	bound(thread)
	predeclared := starlark.StringDict{
		"prefix_rule":     starlark.NewBuiltin("prefix_rule", f.prefixRule),
		"network_rule":    starlark.NewBuiltin("network_rule", f.networkRule),
		"host_executable": starlark.NewBuiltin("host_executable", f.hostExecutable),
	}
	if _, err := starlark.ExecFileOptions(dialect(), thread, name, src, predeclared); err != nil {
		return nil, locate(name, err)
	}
	return f, nil
}

// dialect is the Starlark that Codex reads rules files in: starlark-rust's
// Extended dialect (codex-rs/execpolicy parser.rs) lets for and if
// statements stand at the top level, assigns a global again and again
// (`count += 1` in such a loop) and lets a function call itself. Its
// standard globals have no set and its grammar no while, so neither is
// allowed here. What go.starlark.net cannot parse at all (f-strings, type
// annotations, decorators) fails to load (SPEC §7.3).
func dialect() *syntax.FileOptions {
	return &syntax.FileOptions{TopLevelControl: true, GlobalReassign: true, Recursion: true}
}

// The bounds of evaluating a rules file. maxSteps: a comprehension over a
// huge range fails instead of hanging execd's start. maxCallDepth: runaway
// recursion fails after as many nested calls as Codex allows
// (starlark-rust's MAX_CALLSTACK_RECURSION, 40), long before go.starlark.net's
// own limit of 100,000 frames, which takes seconds and hundreds of MiB of
// stack to reach.
const (
	maxSteps     = 1 << 22
	maxCallDepth = 40
)

// bound makes thread stop at maxSteps steps or maxCallDepth nested calls.
// go.starlark.net has no depth limit to set, so the step limit is moved
// one step on at a time and each step looks at the depth too.
func bound(thread *starlark.Thread) {
	thread.SetMaxExecutionSteps(1)
	thread.OnMaxSteps = func(th *starlark.Thread) {
		switch {
		case th.ExecutionSteps() >= maxSteps:
			th.Cancel("too many steps")
		case th.CallStackDepth() > maxCallDepth+1: // the file's top level is a frame too
			th.Cancel(fmt.Sprintf("more than %d nested calls", maxCallDepth))
		default:
			th.SetMaxExecutionSteps(th.ExecutionSteps() + 1)
		}
	}
}

// LoadFile reads and parses a rules file.
func LoadFile(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, src)
}

// locate prefixes an evaluation error with the position of the call in
// the file that raised it.
func locate(name string, err error) error {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return err // syntax errors carry their position
	}
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		if pos := ee.CallStack[i].Pos; pos.Filename() == name {
			return fmt.Errorf("%s:%d:%d: %s", name, pos.Line, pos.Col, ee.Msg)
		}
	}
	return fmt.Errorf("%s: %s", name, ee.Msg)
}

func (f *File) prefixRule(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern *starlark.List
	var decision, justification starlark.Value = starlark.String("allow"), starlark.None
	var match, notMatch *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "decision?", &decision,
		"justification?", &justification, "match?", &match, "not_match?", &notMatch); err != nil {
		return nil, err
	}
	r := &Rule{}
	var err error
	if r.Pattern, err = parsePattern(pattern); err != nil {
		return nil, err
	}
	if r.Decision, err = parseDecision(decision); err != nil {
		return nil, err
	}
	if r.Justification, err = parseJustification(justification); err != nil {
		return nil, err
	}
	if err := checkExamples(r, match, true); err != nil {
		return nil, err
	}
	if err := checkExamples(r, notMatch, false); err != nil {
		return nil, err
	}
	f.Rules = append(f.Rules, r)
	return starlark.None, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("invalid rule: "+format, args...)
}

func parsePattern(l *starlark.List) ([][]string, error) {
	if l.Len() == 0 {
		return nil, invalid("pattern cannot be empty")
	}
	pattern := make([][]string, l.Len())
	for i := range l.Len() {
		switch v := l.Index(i).(type) {
		case starlark.String:
			pattern[i] = []string{string(v)}
		case *starlark.List:
			alts, err := strings_(v, "pattern alternatives")
			if err != nil {
				return nil, err
			}
			if len(alts) == 0 {
				return nil, invalid("pattern element %d has no alternatives", i)
			}
			pattern[i] = alts
		default:
			return nil, invalid("pattern element %d must be a string or a list of strings, not %s", i, v.Type())
		}
	}
	return pattern, nil
}

// strings_ returns the strings of a Starlark list.
func strings_(l *starlark.List, what string) ([]string, error) {
	out := make([]string, l.Len())
	for i := range l.Len() {
		s, ok := l.Index(i).(starlark.String)
		if !ok {
			return nil, invalid("%s must be strings, not %s", what, l.Index(i).Type())
		}
		out[i] = string(s)
	}
	return out, nil
}

func parseDecision(v starlark.Value) (Decision, error) {
	s, ok := v.(starlark.String)
	switch {
	case !ok:
		return 0, invalid("decision must be a string, not %s", v.Type())
	case s == "allow":
		return Allow, nil
	case s == "prompt":
		return Prompt, nil
	case s == "forbidden":
		return Forbidden, nil
	}
	return 0, invalid("decision %q is not allow, prompt or forbidden", string(s))
}

func parseJustification(v starlark.Value) (string, error) {
	if v == starlark.None {
		return "", nil
	}
	s, ok := v.(starlark.String)
	if !ok {
		return "", invalid("justification must be a string, not %s", v.Type())
	}
	if strings.TrimSpace(string(s)) == "" {
		return "", invalid("justification cannot be empty")
	}
	return string(s), nil
}

// checkExamples checks that every example matches the rule (or none does).
// An example is an argv, or a string split as a shell splits plain words.
func checkExamples(r *Rule, examples *starlark.List, want bool) error {
	if examples == nil {
		return nil
	}
	field := map[bool]string{true: "match", false: "not_match"}[want]
	for i := range examples.Len() {
		var argv []string
		var err error
		switch v := examples.Index(i).(type) {
		case starlark.String:
			argv, err = splitExample(string(v))
		case *starlark.List:
			argv, err = strings_(v, field+" examples")
		default:
			err = invalid("%s example %d must be a string or a list of strings, not %s", field, i, v.Type())
		}
		if err != nil {
			return err
		}
		if _, ok := r.match(argv); ok != want {
			verb := map[bool]string{true: "does not match", false: "matches"}[want]
			return invalid("%s example %q %s the pattern", field, strings.Join(argv, " "), verb)
		}
	}
	return nil
}

// splitExample splits a match example the way the shell splits a plain
// command (quotes honoured, nothing expanded).
func splitExample(s string) ([]string, error) {
	if cmds, ok := PlainCommands([]string{"sh", "-c", s}); ok && len(cmds) == 1 {
		return cmds[0], nil
	}
	return nil, invalid("example %q is not one command of plain words", s)
}

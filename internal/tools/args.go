package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ArgError is a tool argument that fails validation. It becomes a tool
// result with isError set, naming the field (SPEC §3.2, §12).
type ArgError struct {
	Tool  string
	Field string // "" for the arguments object itself
	Msg   string
}

func (e *ArgError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, e.Msg)
	}
	return fmt.Sprintf("invalid arguments for %s: %s: %s", e.Tool, e.Field, e.Msg)
}

// args reads a tool's arguments object field by field. The first problem
// is kept and later reads are no-ops; [args.done] reports it, or an
// unknown field (every schema has additionalProperties false).
type args struct {
	tool   string
	fields map[string]json.RawMessage
	used   map[string]bool
	err    *ArgError
}

// parseArgs accepts a JSON object; absent or null arguments are an empty
// object.
func parseArgs(tool string, raw json.RawMessage) *args {
	a := &args{tool: tool, fields: map[string]json.RawMessage{}, used: map[string]bool{}}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return a
	}
	if raw[0] != '{' || json.Unmarshal(raw, &a.fields) != nil {
		a.err = &ArgError{Tool: tool, Msg: "arguments must be a JSON object"}
	}
	return a
}

func (a *args) fail(field, format string, v ...any) {
	if a.err == nil {
		a.err = &ArgError{Tool: a.tool, Field: field, Msg: fmt.Sprintf(format, v...)}
	}
}

// raw returns a present, non-null field and marks it used.
func (a *args) raw(field string) (json.RawMessage, bool) {
	if a.err != nil {
		return nil, false
	}
	v, ok := a.fields[field]
	a.used[field] = true
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// has reports whether a field is present and not null.
func (a *args) has(field string) bool {
	v, ok := a.fields[field]
	return ok && string(v) != "null"
}

func (a *args) require(field string) {
	if a.err == nil && !a.has(field) {
		a.fail(field, "is required")
	}
}

func (a *args) str(field string) string {
	v, ok := a.raw(field)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		a.fail(field, "expected a string, got %s", describe(v))
	}
	if strings.ContainsRune(s, 0) && !slices.Contains(bytesFields, field) {
		a.fail(field, "holds a NUL byte, which no command line, path or environment can carry")
	}
	return s
}

// bytesFields are the string fields that may hold any byte: what is
// written to a session's input, and a patch's text.
var bytesFields = []string{"chars", "input"}

func (a *args) strList(field string) []string {
	v, ok := a.raw(field)
	if !ok {
		return nil
	}
	var l []string
	if json.Unmarshal(v, &l) != nil {
		a.fail(field, "expected an array of strings, got %s", describe(v))
	}
	if i := slices.IndexFunc(l, func(s string) bool { return strings.ContainsRune(s, 0) }); i >= 0 {
		a.fail(field, "element %d holds a NUL byte, which no command line can carry", i)
	}
	return l
}

// boolean returns the field's value, or def when it is absent.
func (a *args) boolean(field string, def bool) bool {
	v, ok := a.raw(field)
	if !ok {
		return def
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		a.fail(field, "expected true or false, got %s", describe(v))
	}
	return b
}

// integer returns a non-negative integer field, or -1 when it is absent.
// Models send numbers as 1000, 1000.0 or "1000"; all are accepted.
func (a *args) integer(field string) int64 {
	v, ok := a.raw(field)
	if !ok {
		return -1
	}
	text := string(v)
	if v[0] == '"' {
		_ = json.Unmarshal(v, &text)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt64/2 {
		a.fail(field, "expected a non-negative integer, got %s", describe(v))
		return -1
	}
	return int64(f)
}

// oneOf returns a string field that must be one of allowed, or def.
func (a *args) oneOf(field, def string, allowed ...string) string {
	if !a.has(field) {
		a.raw(field)
		return def
	}
	s := a.str(field)
	if a.err == nil && !slices.Contains(allowed, s) {
		a.fail(field, "%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return s
}

// done reports the first problem, or a field the schema does not have.
func (a *args) done() error {
	if a.err != nil {
		return a.err
	}
	var unknown []string
	for f := range a.fields {
		if !a.used[f] {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return &ArgError{Tool: a.tool, Field: unknown[0],
			Msg: fmt.Sprintf("unknown field (%s accepts %s)", a.tool, strings.Join(a.accepted(), ", "))}
	}
	return nil
}

func (a *args) accepted() []string {
	var names []string
	for f := range a.used {
		names = append(names, f)
	}
	slices.Sort(names)
	return names
}

// describe names a JSON value's kind for messages, with short values
// quoted in full.
func describe(v json.RawMessage) string {
	const maxShown = 40
	kind := "a number"
	switch v[0] {
	case '"':
		kind = "a string"
	case '{':
		kind = "an object"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	case 'n':
		return "null"
	}
	if len(v) <= maxShown {
		return kind + " " + string(v)
	}
	return kind
}

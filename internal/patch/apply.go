package patch

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// replacement replaces n lines at start with lines.
type replacement struct {
	start, n int
	lines    []string
}

// applyChunks returns content with chunks applied (SPEC §6.2); name is
// the path as written, for messages. The result ends with a newline
// unless it is empty, and keeps CRLF line ends when every line of
// content had them.
func applyChunks(ctx context.Context, content []byte, chunks []Chunk, name string) ([]byte, error) {
	s := string(content)
	eol := "\n"
	if n := strings.Count(s, "\n"); n > 0 && n == strings.Count(s, "\r\n") {
		eol = "\r\n"
	}
	lines := strings.Split(s, eol)
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the final newline ends a line, it does not start one
	}
	reps, err := locate(&text{lines: lines, ctx: ctx}, chunks, name)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(s)+len(s)/8)
	pos := 0
	write := func(ls []string) {
		for _, l := range ls {
			out = append(out, l...)
			out = append(out, eol...)
		}
	}
	for _, r := range reps {
		start := max(r.start, pos)
		write(lines[pos:start])
		write(r.lines)
		pos = max(pos, r.start+r.n)
	}
	write(lines[pos:])
	return out, nil
}

// locate finds where each chunk applies, from a cursor that moves down
// the file, and returns the replacements sorted by position.
func locate(t *text, chunks []Chunk, name string) ([]replacement, error) {
	var reps []replacement
	cursor := 0
	for _, c := range chunks {
		if c.HasContext {
			i := t.seek([]string{c.Context}, cursor, false)
			if err := t.stopped(); err != nil {
				return nil, err
			}
			if i < 0 {
				return nil, failf("Failed to find context '%s' in %s", c.Context, name)
			}
			cursor = i + 1
		}
		if len(c.Old) == 0 {
			// Only added lines: they go at the end of the file (compat),
			// before a last empty line.
			at := len(t.lines)
			if at > 0 && t.lines[at-1] == "" {
				at--
			}
			reps = append(reps, replacement{start: at, lines: c.New})
			continue
		}
		old, lines := c.Old, c.New
		i := t.seek(old, cursor, c.EOF)
		if i < 0 && old[len(old)-1] == "" {
			// The empty last line stood for the file's final newline.
			old = old[:len(old)-1]
			if len(lines) > 0 && lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			i = t.seek(old, cursor, c.EOF)
		}
		if err := t.stopped(); err != nil {
			return nil, err
		}
		if i < 0 {
			return nil, failf("Failed to find expected lines in %s:\n%s", name, strings.Join(c.Old, "\n"))
		}
		lines = keep(t.lines[i:i+len(old)], lines, c.Kept)
		reps = append(reps, replacement{start: i, n: len(old), lines: lines})
		cursor = i + len(old)
	}
	slices.SortStableFunc(reps, func(a, b replacement) int { return cmp.Compare(a.start, b.start) })
	return reps, nil
}

// keep returns lines, the new lines of a chunk, with each context line
// replaced by the file line it matched: a line the patch does not change
// stays as the file has it, even where only a looser pass of the search
// matched it (other whitespace, typographic characters, a CR of a file
// with mixed line ends). A context line that the search dropped (the
// empty last line that stood for the final newline) is not in matched.
func keep(matched, lines []string, kept []Kept) []string {
	out := slices.Clone(lines)
	for _, k := range kept {
		if k.Old < len(matched) && k.New < len(out) {
			out[k.New] = matched[k.Old]
		}
	}
	return out
}

package patch

import (
	"context"
	"strings"
	"unicode"
)

// text is a file's content as lines, with the forms the looser passes of
// SPEC §6.2 compare, computed when first needed.
type text struct {
	lines []string
	norm  []string // normalize of each line, once a search needed it
	// ctx ends a search early: a pathological patch (thousands of equal
	// lines) can take a while.
	ctx context.Context
}

// checkEvery is how many candidate positions a search tries between two
// looks at its context.
const checkEvery = 1 << 12

// stopped returns the context's cause once it has ended.
func (t *text) stopped() error { return context.Cause(t.ctx) }

// seek returns the first index at or after start where pattern occurs in
// t, or -1. When eof is set only the position that ends at the end of the
// file is tried. Each pass looks at every candidate position before the
// next, looser one is tried: exact, then ignoring trailing whitespace,
// then ignoring surrounding whitespace, then with typographic characters
// normalised (SPEC §6.2).
func (t *text) seek(pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	last := len(t.lines) - len(pattern) // the last candidate position
	if eof {
		start = max(start, last)
	}
	if start > last || start < 0 {
		return -1
	}
	passes := []func(string) string{
		nil,
		func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
		strings.TrimSpace,
	}
	for _, form := range passes {
		if t.ctx.Err() != nil {
			return -1
		}
		want := pattern
		if form != nil {
			want = mapLines(pattern, form)
		}
		if i := t.find(want, start, last, form); i >= 0 {
			return i
		}
	}
	if t.norm == nil {
		t.norm = mapLines(t.lines, normalize)
	}
	return t.findIn(t.norm, mapLines(pattern, normalize), start, last)
}

// find looks for want (already in form) among the lines in form.
func (t *text) find(want []string, start, last int, form func(string) string) int {
	if form == nil {
		return t.findIn(t.lines, want, start, last)
	}
	for i := start; i <= last; i++ {
		if (i-start)%checkEvery == checkEvery-1 && t.ctx.Err() != nil {
			return -1
		}
		if form(t.lines[i]) != want[0] {
			continue
		}
		j := 1
		for j < len(want) && form(t.lines[i+j]) == want[j] {
			j++
		}
		if j == len(want) {
			return i
		}
	}
	return -1
}

func (t *text) findIn(lines, want []string, start, last int) int {
	for i := start; i <= last; i++ {
		if (i-start)%checkEvery == checkEvery-1 && t.ctx.Err() != nil {
			return -1
		}
		if lines[i] != want[0] {
			continue
		}
		j := 1
		for j < len(want) && lines[i+j] == want[j] {
			j++
		}
		if j == len(want) {
			return i
		}
	}
	return -1
}

func mapLines(lines []string, f func(string) string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = f(l)
	}
	return out
}

// normalize is a line as the last pass compares it: surrounding
// whitespace removed, and the typographic dashes, quotes and spaces that
// editors and models substitute for ASCII ones mapped back to ASCII.
func normalize(s string) string {
	s = strings.TrimSpace(s)
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.TrimSpace(strings.Map(asciiLookalike, s))
}

func asciiLookalike(r rune) rune {
	switch r {
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
		return '-'
	case '\u2018', '\u2019', '\u201A', '\u201B':
		return '\''
	case '\u201C', '\u201D', '\u201E', '\u201F':
		return '"'
	case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A',
		'\u202F', '\u205F', '\u3000':
		return ' '
	}
	return r
}

package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The cases of COMPAT-CASES §17.1 that use a token budget. The byte-budget
// cases (1, 5, the Bytes half of 6 and 7) have no counterpart: execd
// budgets output only in tokens.
func TestTruncateCompatCases(t *testing.T) {
	long := "this is an example of a long output that should be truncated"
	emoji := strings.Repeat("😀", 10) + "\nsecond line with text\n"
	tests := []struct {
		name   string
		in     string
		tokens int
		want   string // with the header of the JSON layout
	}{
		{"2 one token", "example output", 1, "Total output lines: 1\n\nex…3 tokens truncated…ut"},
		{"3 fits", "example output", 10, "example output"},
		{"4 five tokens", long, 5, "Total output lines: 1\n\nthis is an…10 tokens truncated… truncated"},
		{"6 two lines", long + "\nalso some other line", 10,
			"Total output lines: 2\n\nthis is an example o…11 tokens truncated…also some other line"},
		{"7 emoji on boundaries", emoji, 8, "Total output lines: 2\n\n😀😀😀😀…8 tokens truncated… line with text\n"},
		{"8 zero budget", "abcdef", 0, "Total output lines: 1\n\n…2 tokens truncated…"},
		{"empty", "", 0, ""},
		{"exactly the budget", "abcd", 1, "abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := truncateOutput(tt.in, tt.tokens).withHeader(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := approxTokens(len(emoji)); got != 16 {
		t.Errorf("original token count of the emoji text = %d, want 16", got)
	}
}

// COMPAT §17.1 case 9, in tokens: one long line cut in its middle keeps
// its line count, so the shell_command layout shows no header.
func TestShellCommandHeaderOnlyWhenLineCountChanges(t *testing.T) {
	exact := truncateOutput(strings.Repeat("1", 10000), 2500)
	if exact.Cut || exact.linesChanged() {
		t.Fatalf("10,000 bytes with a 2,500-token budget must be untouched")
	}
	one := truncateOutput(strings.Repeat("1", 10001), 2500)
	want := strings.Repeat("1", 5000) + "…1 tokens truncated…" + strings.Repeat("1", 5000)
	if one.Text != want {
		t.Fatalf("10,001 ones: got %d bytes", len(one.Text))
	}
	if one.linesChanged() {
		t.Error("a cut inside one line must not change the line count")
	}
	if text := shellCommandText(0, 0, one); strings.Contains(text, "Total output lines") {
		t.Errorf("header shown for an unchanged line count:\n%.80s", text)
	}
	many := truncateOutput(strings.Repeat("line\n", 5000), 100)
	if !many.linesChanged() || !strings.Contains(shellCommandText(0, 0, many), "Total output lines: 5000\nOutput:\n") {
		t.Errorf("header missing when lines were removed")
	}
}

func TestTruncateNeverSplitsRunes(t *testing.T) {
	s := strings.Repeat("é€😀a", 300)
	for tokens := range 60 {
		got, _ := truncateMiddle(s, tokens)
		if !utf8.ValidString(got) {
			t.Fatalf("budget %d produced invalid UTF-8", tokens)
		}
		head, _, _ := strings.Cut(got, "…")
		if len(head) > tokens*bytesPerToken/2 {
			t.Fatalf("budget %d: head of %d bytes exceeds half the budget", tokens, len(head))
		}
	}
}

func TestCountLines(t *testing.T) {
	tests := map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "a\nb\n": 2, "\n": 1, "\n\n": 2, "a\r\nb\r\n": 2}
	for in, want := range tests {
		if got := countLines(in); got != want {
			t.Errorf("countLines(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestToValidUTF8(t *testing.T) {
	tests := map[string]string{
		"plain":         "plain",
		"a\xffb":        "a\uFFFDb",
		"\xff\xfe":      "\uFFFD\uFFFD",
		"é\xc3":         "é\uFFFD",
		"\x00nul":       "\x00nul",
		"ok 😀 \xf0\x9f": "ok 😀 \uFFFD\uFFFD",
	}
	for in, want := range tests {
		if got := toValidUTF8([]byte(in)); got != want {
			t.Errorf("toValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

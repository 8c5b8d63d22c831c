package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// bytesPerToken is the model-facing token estimate (SPEC §5.2, compat).
const bytesPerToken = 4

// approxTokens is the token estimate of n bytes, rounded up.
func approxTokens(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// truncateMiddle cuts s to a budget of maxTokens tokens (4 bytes each) by
// keeping its first ⌊B/2⌋ and last B−⌊B/2⌋ bytes, on UTF-8 boundaries,
// joined by "…N tokens truncated…" where N is the removed bytes in tokens
// (SPEC §5.2). It reports whether it cut.
func truncateMiddle(s string, maxTokens int) (string, bool) {
	budget := max(maxTokens, 0) * bytesPerToken
	if len(s) <= budget {
		return s, false
	}
	headEnd := budget / 2
	for headEnd > 0 && !utf8.RuneStart(s[headEnd]) {
		headEnd--
	}
	tailStart := len(s) - (budget - budget/2)
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	removed := tailStart - headEnd
	return s[:headEnd] + fmt.Sprintf("…%d tokens truncated…", approxTokens(removed)) + s[tailStart:], true
}

// countLines counts lines like Rust's str::lines: a final line without a
// newline counts, an empty remainder after the last newline does not.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// truncated is output cut for the model.
type truncated struct {
	Text       string // the cut text, without any header
	Cut        bool   // whether anything was removed
	TotalLines int    // lines of the text before cutting
}

func truncateOutput(s string, maxTokens int) truncated {
	text, cut := truncateMiddle(s, maxTokens)
	return truncated{Text: text, Cut: cut, TotalLines: countLines(s)}
}

// withHeader is the output as the JSON and unified-exec layouts show it:
// when cut, preceded by "Total output lines: L" and a blank line.
func (t truncated) withHeader() string {
	if !t.Cut {
		return t.Text
	}
	return fmt.Sprintf("Total output lines: %d\n\n%s", t.TotalLines, t.Text)
}

// linesChanged reports whether cutting changed the line count, which is
// when the shell_command layout shows "Total output lines" (compat: a
// long single line cut in its middle does not get the header).
func (t truncated) linesChanged() bool { return countLines(t.Text) != t.TotalLines }

// toValidUTF8 replaces each invalid UTF-8 sequence in b with U+FFFD, so
// that bad bytes are visible rather than dropped (SPEC §5.1).
func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

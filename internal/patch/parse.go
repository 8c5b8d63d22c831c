package patch

import (
	"fmt"
	"strings"
)

// The markers of the format (SPEC §6.1).
const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addMarker    = "*** Add File: "
	deleteMarker = "*** Delete File: "
	updateMarker = "*** Update File: "
	moveMarker   = "*** Move to: "
	eofMarker    = "*** End of File"
)

// Op is what a hunk does to its file.
type Op int

// The operations.
const (
	Add Op = iota
	Delete
	Update
)

// Patch is a parsed patch: its hunks in order.
type Patch struct {
	Hunks []Hunk
}

// Hunk is one file operation of a patch.
type Hunk struct {
	Op   Op
	Path string // as written in the patch
	// MoveTo is the new path of an Update that moves its file, else "".
	MoveTo string
	// Contents is the text of an added file.
	Contents string
	// Chunks are an Update's changes, in file order.
	Chunks []Chunk
}

// Chunk is one change of an Update: Old lines (context and removed)
// become New lines (context and added).
type Chunk struct {
	// Context, when HasContext, is a line to find first (the text after
	// "@@ "); the chunk's lines come after it.
	Context    string
	HasContext bool
	Old, New   []string
	// Kept lists the context lines, in order: the lines the chunk does
	// not change, which keep the text the file has (SPEC §6.2).
	Kept []Kept
	// EOF: the chunk matches only at the end of the file.
	EOF bool
}

// Kept is a context line of a [Chunk]: Old[Old] and New[New] are the
// same line.
type Kept struct{ Old, New int }

// ParseError is a patch that does not follow the format. Line is the
// 1-based line of the patch text it is about, or 0 when it is about the
// whole patch.
type ParseError struct {
	Line int
	Msg  string
}

// Error returns the message of SPEC §6.5.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "Invalid patch: " + e.Msg
	}
	return fmt.Sprintf("Invalid patch hunk on line %d: %s", e.Line, e.Msg)
}

// line is a line of the patch text and its 1-based number.
type line struct {
	n    int
	text string
}

// Parse parses a patch (SPEC §6.1). Tolerated: blank lines and whitespace
// around the markers, a heredoc wrapper (<<'EOF' … EOF), CRLF line ends,
// a first chunk without "@@", blank lines between hunks and between
// chunks. Errors are *ParseError.
func Parse(text string) (*Patch, error) {
	lines := splitLines(text)
	body, err := boundaries(lines)
	if err != nil {
		return nil, err
	}
	p := &Patch{}
	for len(body) > 0 {
		if strings.TrimSpace(body[0].text) == "" {
			body = body[1:]
			continue
		}
		h, n, err := parseHunk(body)
		if err != nil {
			return nil, err
		}
		p.Hunks = append(p.Hunks, h)
		body = body[n:]
	}
	return p, nil
}

// splitLines splits text into numbered lines, dropping a CR before each
// LF, and leaves out the blank lines at either end.
func splitLines(text string) []line {
	var lines []line
	n := 0
	for s := range strings.SplitSeq(text, "\n") {
		n++
		lines = append(lines, line{n, strings.TrimSuffix(s, "\r")})
	}
	return trimBlank(lines)
}

func trimBlank(lines []line) []line {
	for len(lines) > 0 && strings.TrimSpace(lines[0].text) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1].text) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// boundaries checks the Begin and End markers, unwrapping a heredoc, and
// returns the lines between them.
func boundaries(lines []line) ([]line, error) {
	body, err := markers(lines)
	if err == nil {
		return body, nil
	}
	if inner, ok := unwrapHeredoc(lines); ok {
		if body, err2 := markers(inner); err2 == nil {
			return body, nil
		}
	}
	return nil, err
}

func markers(lines []line) ([]line, error) {
	if len(lines) == 0 || strings.TrimSpace(lines[0].text) != beginMarker {
		return nil, &ParseError{Msg: "The first line of the patch must be '" + beginMarker + "'"}
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1].text) != endMarker {
		return nil, &ParseError{Msg: "The last line of the patch must be '" + endMarker + "'"}
	}
	return lines[1 : len(lines)-1], nil
}

// unwrapHeredoc returns the lines inside <<DELIM … DELIM, where the
// delimiter may be quoted with ' or ".
func unwrapHeredoc(lines []line) ([]line, bool) {
	if len(lines) < 4 {
		return nil, false
	}
	open, ok := strings.CutPrefix(strings.TrimSpace(lines[0].text), "<<")
	if !ok {
		return nil, false
	}
	delim := strings.TrimSpace(open)
	if len(delim) >= 2 && (delim[0] == '\'' || delim[0] == '"') && delim[len(delim)-1] == delim[0] {
		delim = delim[1 : len(delim)-1]
	}
	if delim == "" || strings.TrimSpace(lines[len(lines)-1].text) != delim {
		return nil, false
	}
	return trimBlank(lines[1 : len(lines)-1]), true
}

// parseHunk parses the hunk that starts at lines[0] and returns it with
// the number of lines it took.
func parseHunk(lines []line) (Hunk, int, error) {
	header := strings.TrimSpace(lines[0].text)
	if path, ok := cutPath(header, addMarker); ok {
		var b strings.Builder
		n := 1
		for ; n < len(lines); n++ {
			text, ok := strings.CutPrefix(lines[n].text, "+")
			if !ok {
				break
			}
			b.WriteString(text)
			b.WriteByte('\n')
		}
		return Hunk{Op: Add, Path: path, Contents: b.String()}, n, nil
	}
	if path, ok := cutPath(header, deleteMarker); ok {
		return Hunk{Op: Delete, Path: path}, 1, nil
	}
	if path, ok := cutPath(header, updateMarker); ok {
		return parseUpdate(path, lines)
	}
	return Hunk{}, 0, &ParseError{Line: lines[0].n, Msg: fmt.Sprintf(
		"'%s' is not a valid hunk header. Valid hunk headers: '%s{path}', '%s{path}', '%s{path}'",
		header, addMarker, deleteMarker, updateMarker)}
}

// cutPath returns the path after marker, without the blanks around it
// (a model's stray space, not part of a name).
func cutPath(line, marker string) (string, bool) {
	path, ok := strings.CutPrefix(line, marker)
	path = strings.TrimSpace(path)
	return path, ok && path != ""
}

// parseUpdate parses an Update hunk whose header is lines[0].
func parseUpdate(path string, lines []line) (Hunk, int, error) {
	h := Hunk{Op: Update, Path: path}
	n := 1
	if n < len(lines) {
		if to, ok := cutPath(strings.TrimSpace(lines[n].text), moveMarker); ok {
			h.MoveTo = to
			n++
		}
	}
	for n < len(lines) {
		text := lines[n].text
		if strings.TrimSpace(text) == "" {
			n++
			continue
		}
		if strings.HasPrefix(text, "*") {
			break
		}
		c, used, err := parseChunk(lines[n:], len(h.Chunks) == 0)
		if err != nil {
			return Hunk{}, 0, err
		}
		h.Chunks = append(h.Chunks, c)
		n += used
	}
	if len(h.Chunks) == 0 {
		return Hunk{}, 0, &ParseError{Line: lines[0].n, Msg: fmt.Sprintf("Update file hunk for path '%s' is empty", path)}
	}
	return h, n, nil
}

// parseChunk parses the chunk that starts at lines[0]; only the first
// chunk of a hunk may leave out its "@@" line.
func parseChunk(lines []line, first bool) (Chunk, int, error) {
	var c Chunk
	start := 0
	switch head := lines[0].text; {
	case strings.TrimRight(head, " \t") == "@@":
		start = 1
	case strings.HasPrefix(head, "@@ "):
		c.Context, c.HasContext = head[len("@@ "):], true
		start = 1
	case !first:
		return c, 0, &ParseError{Line: lines[0].n,
			Msg: fmt.Sprintf("Expected update hunk to start with a @@ context marker, got: '%s'", head)}
	}
	empty := &ParseError{Msg: "Update hunk does not contain any lines"}
	if start >= len(lines) {
		empty.Line = lines[len(lines)-1].n + 1
		return c, 0, empty
	}
	n := start
	for ; n < len(lines); n++ {
		text := lines[n].text
		if strings.HasPrefix(text, "*") && strings.TrimRight(text, " \t") == eofMarker {
			if n == start {
				empty.Line = lines[n].n
				return c, 0, empty
			}
			c.EOF = true
			n++
			break
		}
		if text == "" {
			c.keep("")
			continue
		}
		switch rest := text[1:]; text[0] {
		case ' ':
			c.keep(rest)
		case '+':
			c.New = append(c.New, rest)
		case '-':
			c.Old = append(c.Old, rest)
		default:
			if n == start && strings.HasPrefix(text, "*** ") {
				empty.Line = lines[n].n // the next hunk: this chunk has no lines
				return c, 0, empty
			}
			if n == start {
				return c, 0, &ParseError{Line: lines[n].n, Msg: fmt.Sprintf("Unexpected line found in update hunk: '%s'. "+
					"Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", text)}
			}
			return c, n, nil // the next chunk or hunk starts here
		}
	}
	return c, n, nil
}

// keep adds a context line to c.
func (c *Chunk) keep(line string) {
	c.Kept = append(c.Kept, Kept{Old: len(c.Old), New: len(c.New)})
	c.Old, c.New = append(c.Old, line), append(c.New, line)
}

// Error is a patch that cannot be applied; Msg is the message of SPEC
// §6.5, naming the path as the patch writes it.
type Error struct {
	Msg string
	// Err is the system error behind Msg, if any (a permission denied,
	// say), for errors.Is; it does not change the message.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the system error behind the message, or nil.
func (e *Error) Unwrap() error { return e.Err }

func failf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// failWith is failf that keeps the system error cause behind the message.
func failWith(cause error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: cause}
}

package policy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.starlark.net/syntax"
	"golang.org/x/sys/unix"
)

// AmendLine is the line that allows prefix from now on, as Codex writes
// it: prefix_rule(pattern=["python3"], decision="allow"). Tokens are
// Starlark string literals, so any byte survives the round trip.
func AmendLine(prefix []string) string {
	quoted := make([]string, len(prefix))
	for i, t := range prefix {
		quoted[i] = syntax.Quote(t, false)
	}
	return fmt.Sprintf("prefix_rule(pattern=[%s], decision=\"allow\")", strings.Join(quoted, ","))
}

// Amend appends the rule that allows prefix to the rules file at path
// (SPEC §3.3 allow_prefix), creating the file and its directory if
// needed, unless the file has that line already. It holds an exclusive
// lock on the file while it reads and writes, so concurrent amendments
// (another execd) neither interleave nor duplicate. It returns the rule,
// for the caller to put in force.
func Amend(path string, prefix []string) (*Rule, error) {
	if len(prefix) == 0 {
		return nil, fmt.Errorf("amend %s: empty prefix", path)
	}
	line := AmendLine(prefix)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("amend %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("amend %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("amend %s: lock: %w", path, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing unlocks too
	rule := &Rule{Pattern: make([][]string, len(prefix)), Decision: Allow}
	for i, t := range prefix {
		rule.Pattern[i] = []string{t}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("amend %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(nil, len(old)+1)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == line {
			return rule, nil // there already
		}
	}
	add := line + "\n"
	if len(old) > 0 && old[len(old)-1] != '\n' {
		add = "\n" + add
	}
	if _, err := f.WriteString(add); err != nil {
		return nil, fmt.Errorf("amend %s: %w", path, err)
	}
	return rule, nil
}

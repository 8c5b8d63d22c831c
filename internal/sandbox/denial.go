package sandbox

import "strings"

// denialWords are what a command says when the sandbox stopped it (SPEC
// §8.4), compared case-insensitively: Codex's list without its bare
// "sandbox", "seccomp" and "landlock". execd's sandbox makes a refused call
// fail with the errors below (or SIGSYS), and as plain words they made any
// failed command that mentioned them a denial: `go test ./sandbox/` failing,
// `grep -r sandbox` with a match and a later error.
var denialWords = []string{"operation not permitted", "permission denied", "read-only file system",
	"failed to write file"}

// LooksDenied reports whether a sandboxed command that exited with code
// and printed output was probably stopped by the sandbox (SPEC §8.4): a
// non-zero exit with one of the telltale phrases, or 159 (SIGSYS). Exit
// codes 2, 126 and 127 are usage, not-executable and not-found otherwise.
func LooksDenied(sandboxed bool, code int, output string) bool {
	if !sandboxed || code == 0 {
		return false
	}
	if code == 128+31 { // SIGSYS: a seccomp kill
		return true
	}
	lower := strings.ToLower(output)
	for _, w := range denialWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

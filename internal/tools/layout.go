package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// tenths rounds a duration to tenths of a second the way the compat
// layouts do: in single precision, half away from zero.
func tenths(d time.Duration) float32 {
	return float32(math.Round(float64(float32(d.Seconds())*10))) / 10
}

// shortSeconds formats a rounded duration in its shortest form: 0, 0.1,
// 2.5 (the "Wall time: S seconds" of SPEC §4.2).
func shortSeconds(d time.Duration) string {
	return strconv.FormatFloat(float64(tenths(d)), 'f', -1, 32)
}

// jsonSeconds formats a rounded duration as a JSON float that always has
// a fraction: 0.0, 0.1, 2.0 (the "duration_seconds" of SPEC §4.1).
func jsonSeconds(d time.Duration) string {
	s := shortSeconds(d)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// shellText is the model-facing text of the shell tool (SPEC §4.1): a JSON
// object with the output and its metadata, in that key order.
func shellText(output string, exitCode int, wall time.Duration) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the model reads this text: keep < > & as they are
	_ = enc.Encode(output)   // a string always encodes
	quoted := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return fmt.Sprintf(`{"output":%s,"metadata":{"exit_code":%d,"duration_seconds":%s}}`,
		quoted, exitCode, jsonSeconds(wall))
}

// shellCommandText is the model-facing text of shell_command and the
// other freeform results (SPEC §4.2, §4.5).
func shellCommandText(exitCode int, wall time.Duration, out truncated) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d\nWall time: %s seconds\n", exitCode, shortSeconds(wall))
	if out.linesChanged() {
		fmt.Fprintf(&b, "Total output lines: %d\n", out.TotalLines)
	}
	b.WriteString("Output:\n")
	b.WriteString(out.Text)
	return b.String()
}

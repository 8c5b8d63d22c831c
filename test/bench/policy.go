package main

import (
	"fmt"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/execd/execd/internal/policy"
)

// policyBench times the exec policy's decision on a 2 KiB script (issue
// #12: target < 0.5 ms p50), in process, against parsing the same script
// once with mvdan.cc/sh (the floor: the policy must read it): a plain one
// (commands joined by && and pipes) and one that is not (redirections,
// substitutions, a heredoc, nested shells and wrappers, which the policy
// follows), under rules of the usual size.
func policyBench() error {
	rules, err := policy.ParseFile("bench.rules", []byte(`
prefix_rule(pattern=["rm"], decision="forbidden")
prefix_rule(pattern=["git", ["push", "reset"]], decision="prompt")
prefix_rule(pattern=[["ls", "cat", "grep", "head", "tail", "wc", "echo", "sort", "uniq", "cut", "tr"]], decision="allow")
prefix_rule(pattern=["git", ["status", "diff", "log", "show", "add", "commit"]], decision="allow")
prefix_rule(pattern=["go", ["build", "test", "vet"]], decision="allow")
prefix_rule(pattern=["npm", ["test", "run"]], decision="allow")
prefix_rule(pattern=["cargo", ["build", "test", "check"]], decision="allow")
prefix_rule(pattern=["docker"], decision="prompt")
`))
	if err != nil {
		return err
	}
	rs := policy.NewRules(rules)
	plain := buildScript(func(i int) string {
		return fmt.Sprintf("git status --short src/module%d | grep -v '^??' | head -n 20 && go test ./pkg%d/...", i, i)
	}, " && ")
	mixed := buildScript(func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf("echo \"$(git log -n %d --format=%%h)\" > out%d.txt 2>&1", i, i)
		case 1:
			return fmt.Sprintf("bash -o errexit -c 'cd dir%d && env CI=1 timeout 5 npm test'", i)
		case 2:
			return fmt.Sprintf("find . -name '*.go' -newer stamp%d | xargs grep -l TODO", i)
		}
		return fmt.Sprintf("cat <<'EOF' | sort -u > list%d\nalpha\nbeta\nEOF", i)
	}, "\n")
	for _, c := range []struct {
		name, script string
	}{{"policy decision, plain 2 KiB", plain}, {"policy decision, 2 KiB with more", mixed}} {
		argv := []string{"bash", "-lc", c.script}
		decide := func() error {
			policy.Require(rs, policy.Request{Argv: argv, Policy: policy.OnRequest, Sandboxed: true})
			return nil
		}
		parse := func() error {
			_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(c.script), "")
			return err
		}
		times, err := interleave(2000, parse, decide)
		if err != nil {
			return err
		}
		p50 := pct(times[1], 50)
		report(c.name, fmt.Sprintf("p50 %v p95 %v; one parse p50 %v (%.1f× it)", p50, pct(times[1], 95), pct(times[0], 50),
			float64(p50)/float64(pct(times[0], 50))), "< 0.5 ms", p50 < 500*time.Microsecond)
	}
	return nil
}

// buildScript joins pieces made by piece until the script is 2 KiB.
func buildScript(piece func(int) string, sep string) string {
	var b strings.Builder
	for i := 0; b.Len() < 2048; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(piece(i))
	}
	return b.String()
}

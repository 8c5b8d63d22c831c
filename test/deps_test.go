package test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/execd/execd"

// allowedInternal is, for each internal package, the internal packages it
// may depend on (STYLE §1: leaves import nothing of ours; interfaces
// belong to the consumer). The reason for each row is in its comment.
var allowedInternal = map[string][]string{
	"rpc":       nil,                             // JSON-RPC framing knows nothing of tools or processes
	"procfs":    nil,                             // reads /proc for the leaves below
	"budget":    {"procfs"},                      // the task budget execd shares with its commands
	"reaper":    {"procfs", "budget"},            // owns processes, takes no logger
	"fspath":    nil,                             // resolves paths as the kernel does; opens files others may have placed
	"gitrepo":   {"fspath"},                      // how git finds repositories and reads configuration (never blocking on a FIFO)
	"sandbox":   {"fspath", "gitrepo", "procfs"}, // restrictions and platform facts
	"procstore": nil,                             // the session table and output buffers
	"policy":    nil,                             // what commands stand for and which may run unasked
	"audit":     nil,                             // appends the audit trail
	"shellsnap": {"fspath"},                      // snapshots of login profiles; the caller runs the shells
	"patch":     {"fspath"},                      // parses and applies patches; knows no approvals
	"ptyio":     {"procfs"},                      // terminals, and whether one waits for input
	"proctest":  {"procfs"},                      // test helper: finds processes by marker
	// test helper: runs a test binary under the process's one Reaper
	"reaper/reapertest": {"reaper"},
	// orchestrator runs commands through the leaves, deciding with policy
	// whether they may run and recording that in audit, and applies
	// patches once approved, resolves programs with fspath and asks
	// gitrepo what a git it would run
	// outside the sandbox would use, and has shellsnap stand in for login
	// profiles; it never speaks MCP (it declares the Approver that tools
	// implements).
	"orchestrator": {"reaper", "sandbox", "procstore", "ptyio", "policy", "audit", "patch", "gitrepo", "fspath", "shellsnap"},
	// tools speaks MCP; it uses sandbox for its error and mode types and
	// the denial guess, policy for shell-quoting commands, patch to find
	// patches in shell calls and word their results.
	"tools": {"rpc", "orchestrator", "sandbox", "procstore", "policy", "patch"},
}

// onlyInCmd are third-party packages reserved to cmd/execd (STYLE §7):
// configuration and process-wide signal handling are wiring.
var onlyInCmd = []string{"github.com/spf13/viper", "github.com/spf13/pflag", "os/signal"}

func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", module+"/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		name := strings.TrimPrefix(pkg, module+"/internal/")
		allowed, known := allowedInternal[name]
		if !known {
			t.Errorf("package internal/%s has no row in allowedInternal: add one with its reason", name)
			continue
		}
		imports, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list -f Imports %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(imports)) {
			if d, ok := strings.CutPrefix(imp, module+"/internal/"); ok && !slices.Contains(allowed, d) {
				t.Errorf("internal/%s imports internal/%s, which it may not", name, d)
			}
		}
		deps, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(deps)) {
			if slices.Contains(onlyInCmd, dep) {
				t.Errorf("internal/%s depends on %s, which only cmd/execd may use", name, dep)
			}
		}
	}
}

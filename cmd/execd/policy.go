package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/audit"
	"github.com/execd/execd/internal/policy"
)

// execPolicy is the exec policy a configuration puts in force (SPEC §7):
// the rules files that loaded, those that did not (their rules are not
// used), and the audit file.
type execPolicy struct {
	rules  *policy.Rules
	loaded []string
	failed []error
	audit  *audit.Log
}

// loadPolicy reads the rules files of cfg: rules.files in order, then
// every *.rules in the rules directory, sorted. A file that fails to
// load is reported in failed, for the caller to report; it is not fatal. The audit file is opened when
// audit.path is set; failing to open it is an error (exit 2), since
// running unaudited is not what the user configured.
func loadPolicy(cfg *config, log *zap.Logger) (*execPolicy, error) {
	p := &execPolicy{}
	var files []*policy.File
	for _, l := range loadRules(rulesFiles(cfg)) {
		if l.err != nil {
			p.failed = append(p.failed, l.err)
			continue
		}
		files = append(files, l.file)
		p.loaded = append(p.loaded, l.path)
		if n := len(l.file.Network) + len(l.file.HostExecutables); n > 0 {
			log.Info("rules file: network_rule and host_executable are parsed but not enforced",
				zap.String("file", l.path), zap.Int("count", n))
		}
	}
	p.rules = policy.NewRules(files...)
	log.Info("exec policy", zap.String("approval_policy", cfg.ApprovalPolicy), zap.Strings("rules_files", p.loaded),
		zap.Int("failed", len(p.failed)), zap.String("amend_file", cfg.Rules.AmendFile), zap.String("audit", cfg.AuditPath))
	if cfg.AuditPath != "" {
		a, err := audit.Open(cfg.AuditPath, log.Named("audit"))
		if err != nil {
			return nil, configErrorf("audit.path: %v", errors.Unwrap(err))
		}
		p.audit = a
	}
	return p, nil
}

// rulesLoad is one rules file read: its rules, or why they are not used.
type rulesLoad struct {
	path string
	file *policy.File
	err  error // FILE:LINE:COL: invalid rule: …, or why it cannot be read
}

// loadRules reads the rules files at paths, in order. serve, run, check
// and doctor all read them here.
func loadRules(paths []string) []rulesLoad {
	loads := make([]rulesLoad, len(paths))
	for i, p := range paths {
		f, err := policy.LoadFile(p)
		loads[i] = rulesLoad{path: p, file: f, err: err}
	}
	return loads
}

// rulesFiles lists the rules files of cfg, each once: rules.files, then
// the rules directory's *.rules in name order.
func rulesFiles(cfg *config) []string {
	files := slices.Clone(cfg.Rules.Files)
	if dir := rulesDir(); dir != "" {
		found, _ := filepath.Glob(filepath.Join(dir, "*.rules")) // the pattern is valid
		slices.Sort(found)
		files = append(files, found...)
	}
	var out []string
	for _, f := range files {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// Close closes the audit file.
func (p *execPolicy) Close() {
	if err := p.audit.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "execd: close audit file: %v\n", err)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/execd/execd/internal/policy"
)

func checkFlags(fs *pflag.FlagSet) {
	fs.SetInterspersed(false)
	fs.StringArray("rules", nil, "a rules file (repeatable; default: the configured rules files)")
	fs.Bool("pretty", false, "indent the JSON")
}

// checkCmd is `execd check [--rules F]... -- CMD...`: the verdict of the
// rules (those given, else the configured ones) on an argv as given,
// printed as `codex execpolicy check` prints it (SPEC §7.4). Nothing is
// run.
func checkCmd(fs *pflag.FlagSet, argv []string) int {
	files, _ := fs.GetStringArray("rules")
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "execd check: missing command (usage: execd check [--rules FILE]... [--pretty] -- CMD...)")
		return exitUsage
	}
	if len(files) == 0 {
		cfg, err := loadConfig(fs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "execd: %v\n", err)
			return exitUsage
		}
		files = rulesFiles(cfg)
	}
	var loaded []*policy.File
	for _, l := range loadRules(files) {
		if l.err != nil {
			fmt.Fprintf(os.Stderr, "execd check: %v\n", l.err)
			return 1
		}
		loaded = append(loaded, l.file)
	}
	res := policy.NewRules(loaded...).CheckArgv(argv)
	enc := json.NewEncoder(os.Stdout)
	if pretty, _ := fs.GetBool("pretty"); pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "execd check: %v\n", err)
		return exitInternal
	}
	return 0
}

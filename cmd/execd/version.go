package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// version and commit are set by the Makefile with -ldflags -X.
var (
	version = "dev"
	commit  = ""
)

func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
	}
	return "unknown"
}

func versionCmd(_ *pflag.FlagSet, _ []string) int {
	fmt.Printf("execd %s (commit %s, %s)\n", version, buildCommit(), runtime.Version())
	return 0
}

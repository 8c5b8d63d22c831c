package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes of execd's own failures; a command's code passes through.
const (
	exitUsage    = 2   // bad flags or configuration
	exitInternal = 125 // execd itself failed
	exitRefused  = 126 // the command was refused or cannot be executed
	exitNotFound = 127 // the program does not exist
)

// command is a subcommand of execd.
type command struct {
	name, args, summary string
	// flags adds the command's own flags beyond the common ones.
	flags func(*pflag.FlagSet)
	// run runs the command with its parsed flags and positional arguments.
	run func(fs *pflag.FlagSet, args []string) int
}

func commands() []command {
	return []command{
		{name: "serve", summary: "run the MCP server on stdin/stdout (the default)", run: serveCmd},
		{name: "run", args: "-- CMD [ARG...]", summary: "run one command through the same pipeline and exit with its code",
			flags: func(fs *pflag.FlagSet) {
				fs.SetInterspersed(false) // flags end at the command: execd run ls -l
				fs.Duration("timeout", 0, "kill the command after this long, e.g. 30s (default: no timeout)")
			}, run: runCmd},
		{name: "check", args: "[--rules FILE]... [--pretty] -- CMD...", summary: "print the rules verdict for an argv",
			flags: checkFlags, run: checkCmd},
		{name: "apply-patch", args: "[--cwd DIR] [PATCH]", summary: "apply a patch from the argument or stdin", run: applyPatchCmd},
		{name: "sandbox", args: "[--mode M] [--network] [--writable DIR]... -- CMD...", summary: "run a command under the sandbox only",
			flags: sandboxFlags, run: sandboxCmd},
		{name: "doctor", summary: "report what this host supports", run: doctorCmd},
		{name: "version", summary: "print version, commit and Go version", run: versionCmd},
	}
}

// run dispatches to a subcommand and returns the exit code.
func run(args []string) int {
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" || (name == "serve" && len(args) > 0 && (args[0] == "-h" || args[0] == "--help")) {
		usage(os.Stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == name {
			return c.dispatch(args)
		}
	}
	fmt.Fprintf(os.Stderr, "execd: unknown command %q (run execd -h for the list)\n", name)
	return exitUsage
}

func (c command) dispatch(args []string) int {
	fs := pflag.NewFlagSet("execd "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, below
	addCommonFlags(fs)
	if c.flags != nil {
		c.flags(fs)
	}
	err := fs.Parse(args)
	help, _ := fs.GetBool("help") // a defined help flag does not make Parse return ErrHelp
	switch {
	case errors.Is(err, pflag.ErrHelp) || (err == nil && help):
		c.usage(os.Stdout, fs)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "execd %s: %v (run execd %s -h for usage)\n", c.name, err, c.name)
		return exitUsage
	}
	return c.run(fs, fs.Args())
}

// addCommonFlags adds the flags every command accepts (SPEC §1).
func addCommonFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "configuration file (default $XDG_CONFIG_HOME/execd/config.toml)")
	fs.String("cwd", "", "turn directory that relative workdirs resolve against (default: the current directory)")
	fs.String("sandbox", "", "sandbox mode: read-only, workspace-write, danger-full-access or external-sandbox")
	fs.String("approval", "", "approval policy: untrusted, on-failure, on-request or never")
	fs.String("log-level", "", "log level: debug, info, warn or error")
	fs.BoolP("help", "h", false, "show help")
}

func (c command) usage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: execd %s [flags] %s\n\n%s.\n\nFlags:\n%s", c.name, c.args, capitalize(c.summary), fs.FlagUsages())
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "execd runs shell commands for AI agents: an MCP server on stdin/stdout.\n\nUsage: execd [command] [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nCommon flags: --config FILE, --cwd DIR, --sandbox MODE, --approval POLICY, --log-level LEVEL, -h.\nRun execd COMMAND -h for a command's flags.\n")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

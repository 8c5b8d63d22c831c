package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/execd/execd/internal/patch"
)

// applyPatchCmd is `execd apply-patch [--cwd DIR] [PATCH]`: the patch
// from the argument or stdin, applied in the turn directory as the user
// who runs it (no sandbox, no approval: they typed it). SPEC §6.5: the
// summary on stdout and exit 0, the error on stderr and exit 1; usage
// errors exit 2.
func applyPatchCmd(fs *pflag.FlagSet, args []string) int {
	if len(args) > 1 {
		fmt.Fprintf(os.Stderr, "execd apply-patch: %d arguments: pass the patch as one (quote it) or on stdin\n", len(args))
		return exitUsage
	}
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: %v\n", err)
		return exitUsage
	}
	var text string
	if len(args) == 1 {
		text = args[0]
	} else {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "execd apply-patch: read the patch from stdin: %v\n", err)
			return exitUsage
		}
		if len(b) == 0 {
			fmt.Fprintln(os.Stderr, "execd apply-patch: no patch: pass it as the argument or on stdin")
			return exitUsage
		}
		text = string(b)
	}
	// Interrupted while writing, the patch is taken back, not left half done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	sum, err := patch.Apply(ctx, text, cfg.Cwd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := io.WriteString(os.Stdout, sum.String()); err != nil {
		return exitInternal
	}
	return 0
}

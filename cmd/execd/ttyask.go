package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/execd/execd/internal/orchestrator"
)

// ttyApprover asks approvals on the controlling terminal (execd run,
// SPEC §1); without one, nobody can approve and the answer is no.
type ttyApprover struct {
	timeout time.Duration // approval.timeout; 0 means none
}

// errTTYTimeout ends a question nobody answered.
var errTTYTimeout = errors.New("approval.timeout passed")

// Approve shows the question on /dev/tty and reads one line.
func (a ttyApprover) Approve(ctx context.Context, q orchestrator.Question) (orchestrator.Answer, error) {
	parent := ctx
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.timeout, errTTYTimeout)
		defer cancel()
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return orchestrator.Deny, fmt.Errorf("it needs approval and there is no terminal to ask on (%v)", errors.Unwrap(err))
	}
	defer tty.Close()
	// Closing the terminal ends the read when execd is interrupted.
	stop := context.AfterFunc(ctx, func() { _ = tty.Close() })
	defer stop()
	choices := "[o]nce, [s]ession, [d]eny"
	if q.Prefix != nil {
		choices = "[o]nce, [s]ession, [p]refix, [d]eny"
	}
	fmt.Fprintf(tty, "\n%s\nAllow? %s (default deny): ", q.Message(), choices)
	line, err := bufio.NewReader(tty).ReadString('\n')
	if err != nil && line == "" {
		switch {
		case parent.Err() != nil:
			return orchestrator.Deny, context.Cause(parent)
		case ctx.Err() != nil:
			fmt.Fprintln(os.Stderr)
			return orchestrator.Deny, fmt.Errorf("nobody answered within %s (approval.timeout)", a.timeout)
		}
		return orchestrator.Deny, fmt.Errorf("no answer on the terminal: %w", err)
	}
	return ttyAnswer(line, q.Prefix != nil), nil
}

// ttyAnswer reads a typed answer; anything unclear is a no.
func ttyAnswer(line string, prefixOffered bool) orchestrator.Answer {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "o", "once", "y", "yes", "allow_once":
		return orchestrator.AllowOnce
	case "s", "session", "allow_session":
		return orchestrator.AllowSession
	case "p", "prefix", "allow_prefix":
		if prefixOffered {
			return orchestrator.AllowPrefix
		}
	}
	return orchestrator.Deny
}

package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/patch"
)

// Patches are written with exactly the rights of a sandboxed command
// (SPEC §7.6): the applier is this binary run as a sandboxed command,
// which prepares the patch, reports its targets, and writes it when told
// to. What it may not read or write is asked for like any write outside
// the roots, and only then written by execd itself.

// PatchApplierArg makes execd the patch applier. It is not a user
// command; only the orchestrator starts it, in the sandbox.
const PatchApplierArg = "__execd-patch-applier"

// applierRequest is the applier's first line of input.
type applierRequest struct {
	Patch string `json:"patch"`
	Dir   string `json:"dir"`
}

// applierReport is a line of the applier's output: the patch's targets
// once prepared, or its summary once written, or why it failed. Denied
// reports a failure the sandbox caused (a file it may not read or
// write); nothing was changed then.
type applierReport struct {
	Targets []patch.Target `json:"targets,omitempty"`
	Summary *patch.Summary `json:"summary,omitempty"`
	Error   string         `json:"error,omitempty"`
	Denied  bool           `json:"denied,omitempty"`
}

// commitLine tells the applier to write the patch; EOF in its place
// tells it to stop.
const commitLine = "commit\n"

// ApplierMain is the patch applier (PatchApplierArg): one request on in,
// reports on out. main calls it, before anything else, with a context
// that SIGTERM and SIGINT end (execd stops it so, and so does its
// shutdown): a Commit under way is then rolled back. So do the TestMains
// of packages whose tests apply patches (/proc/self/exe is then the test
// binary).
func ApplierMain(ctx context.Context, in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	var req applierRequest
	if err != nil || json.Unmarshal(line, &req) != nil {
		_ = enc.Encode(applierReport{Error: "the patch applier got no request"})
		return 2
	}
	fail := func(err error) int {
		_ = enc.Encode(applierReport{Error: err.Error(), Denied: deniedBySandbox(err)})
		return 1
	}
	p, err := patch.Parse(req.Patch)
	if err != nil {
		return fail(err)
	}
	pl, err := patch.Prepare(ctx, p, req.Dir)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(applierReport{Targets: pl.Targets()}); err != nil {
		return 1
	}
	if next, err := r.ReadString('\n'); err != nil || next != commitLine {
		return 0 // execd writes it itself, or not at all
	}
	if err := pl.Commit(ctx); err != nil {
		return fail(err)
	}
	s := pl.Summary()
	_ = enc.Encode(applierReport{Summary: &s})
	return 0
}

// deniedBySandbox reports whether a patch failed for want of rights: a
// permission refused, or a read-only mount.
func deniedBySandbox(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS)
}

// applier is a running patch applier, owned by one ApplyPatch.
type applier struct {
	o      *Orchestrator
	cmd    *exec.Cmd
	in     *os.File
	writer sync.WaitGroup // the request's writer; close joins it
	out    *bufio.Reader
	outR   *os.File
	stderr strings.Builder
	done   bool // waited for
}

// startApplier starts the applier in the sandbox with the patch. Errors
// are the start's (a *sandbox.SetupError, say).
func (o *Orchestrator) startApplier(text, dir string) (*applier, error) {
	o.taintRoots() // a patch may make a .git where there is none
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	a := &applier{o: o, in: inW, outR: outR, out: bufio.NewReader(outR)}
	a.cmd = &exec.Cmd{
		Path:        "/proc/self/exe", // this binary; the helper execs its own
		Args:        []string{"execd-patch", PatchApplierArg},
		Dir:         dir,
		Env:         []string{},
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      &limitedWriter{b: &a.stderr, n: 4 << 10},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = o.start(a.cmd, true)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, o.startError(a.cmd, err)
	}
	b, err := json.Marshal(applierRequest{Patch: text, Dir: dir})
	if err == nil {
		// A pipe holds 64 KiB: a larger patch is written while the
		// applier reads it. close interrupts and joins the writer.
		a.writer.Go(func() { _, _ = a.in.Write(append(b, '\n')) })
	}
	return a, nil
}

// report reads the applier's next report; ctx ending stops the applier.
func (a *applier) report(ctx context.Context) (applierReport, error) {
	stop := context.AfterFunc(ctx, func() { _ = a.o.reaper.Signal(a.cmd, syscall.SIGTERM) })
	defer stop()
	line, err := a.out.ReadBytes('\n')
	var rep applierReport
	switch {
	case ctx.Err() != nil:
		return rep, context.Cause(ctx)
	case err != nil:
		a.wait()
		return rep, fmt.Errorf("the patch applier stopped (%v): %s", a.cmd.ProcessState, strings.TrimSpace(a.stderr.String()))
	case json.Unmarshal(line, &rep) != nil:
		return rep, fmt.Errorf("unreadable report from the patch applier: %q", line)
	}
	return rep, nil
}

// commit tells the applier to write the patch.
func (a *applier) commit() error {
	_, err := a.in.WriteString(commitLine)
	return err
}

// close tells the applier to stop (if it has not) and waits for it,
// killing it when it does not stop within killWait.
func (a *applier) close() {
	_ = a.in.Close()
	a.writer.Wait()
	a.wait()
	_ = a.outR.Close()
}

func (a *applier) wait() {
	if a.done {
		return
	}
	a.done = true
	t := time.AfterFunc(killWait, func() { _ = a.o.reaper.Signal(a.cmd, syscall.SIGKILL) })
	_, _ = a.o.reaper.Wait(a.cmd)
	t.Stop()
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	b *strings.Builder
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if rest := w.n - w.b.Len(); rest > 0 {
		w.b.Write(p[:min(len(p), rest)])
	}
	return len(p), nil
}

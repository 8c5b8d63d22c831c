package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
)

// launchers holds the resident sandbox launcher of each sandbox policy
// (SPEC §8.3): sandboxed commands are forked by it, in its PID namespace,
// where the host has user and PID namespaces.
type launchers struct {
	mu    sync.Mutex                   // held while one is looked for or started
	byKey map[string]*sandbox.Launcher // guarded by mu: the current one per policy
	all   []*sandbox.Launcher          // guarded by mu: every one started, retired ones too
	waits sync.WaitGroup               // one goroutine per launcher, reaping it
}

// stop has every launcher end its commands and exit (Close: after the
// reaper's Shutdown they are gone already), and waits until they have.
func (ls *launchers) stop() {
	ls.mu.Lock()
	for _, l := range ls.all {
		l.Stop()
	}
	ls.all, ls.byKey = nil, nil
	ls.mu.Unlock()
	ls.waits.Wait()
}

// launchable reports whether cmd, sandboxed under p, can be started by
// a launcher: the host has the namespaces, and the command's stdio are
// files (or a terminal the launcher makes).
func (o *Orchestrator) launchable(cmd *exec.Cmd, p *sandbox.Policy) bool {
	if !o.support.PIDNS {
		return false
	}
	if p.Terminal != nil {
		return true
	}
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if _, ok := s.(*os.File); s != nil && !ok {
			return false
		}
	}
	return true
}

// launch starts cmd under p through the policy's launcher, and returns
// the master of its terminal when p asks for one. A launcher found gone
// meanwhile is replaced once.
func (o *Orchestrator) launch(cmd *exec.Cmd, p sandbox.Policy) (*os.File, error) {
	for attempt := 1; ; attempt++ {
		l, err := o.launcherFor(p)
		if err != nil {
			return nil, err
		}
		var master *os.File
		err = o.reaper.StartRemote(cmd, func() (reaper.Remote, error) {
			proc, m, err := l.Launch(cmd, p.Terminal)
			if err != nil {
				return nil, err
			}
			master = m
			return proc, nil
		})
		if errors.Is(err, sandbox.ErrLauncherGone) && attempt == 1 {
			continue
		}
		if errors.Is(err, sandbox.ErrLauncherGone) {
			err = &sandbox.SetupError{Stage: "start", Err: err}
		}
		return master, err
	}
}

// launcherFor returns a live launcher for p that still covers it, or
// starts one (retiring the one it replaces).
func (o *Orchestrator) launcherFor(p sandbox.Policy) (*sandbox.Launcher, error) {
	key := policyKey(p)
	o.launchers.mu.Lock()
	defer o.launchers.mu.Unlock()
	if l := o.launchers.byKey[key]; l != nil {
		if l.Alive() && l.Covers(&p) {
			return l, nil
		}
		if l.Alive() {
			o.log.Info("sandbox launcher retired: the protected entries changed")
			l.Retire()
		}
		delete(o.launchers.byKey, key)
	}
	l, err := sandbox.NewLauncher(p, o.support)
	if err != nil {
		return nil, &sandbox.SetupError{Stage: "prepare", Err: err}
	}
	err = o.reaper.StartResident(l.Cmd, l.Stop)
	l.Started(err)
	switch {
	case errors.Is(err, reaper.ErrClosed):
		return nil, err
	case err != nil:
		return nil, &sandbox.SetupError{Stage: "start", Err: fmt.Errorf("start the sandbox launcher: %w", err)}
	}
	o.launchers.all = append(slices.DeleteFunc(o.launchers.all, (*sandbox.Launcher).Exited), l)
	o.launchers.waits.Go(func() {
		ws, _ := o.reaper.Wait(l.Cmd)
		o.log.Debug("sandbox launcher exited", zap.Int("pid", l.Cmd.Process.Pid), zap.Int("status", int(ws)))
	})
	if err := l.Ready(helperTimeout); err != nil {
		_ = o.reaper.Signal(l.Cmd, syscall.SIGKILL)
		return nil, err
	}
	o.log.Debug("sandbox launcher started", zap.Int("pid", l.Cmd.Process.Pid))
	if o.launchers.byKey == nil {
		o.launchers.byKey = map[string]*sandbox.Launcher{}
	}
	o.launchers.byKey[key] = l
	return l, nil
}

// policyKey identifies a policy without its command's terminal.
func policyKey(p sandbox.Policy) string {
	p.Terminal = nil
	b, _ := json.Marshal(p)
	return string(b)
}

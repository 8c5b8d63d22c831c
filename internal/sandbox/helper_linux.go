package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The helper's descriptors (ExtraFiles 0 and 1).
const (
	policyFD = 3
	statusFD = 4
)

// setupExitCode is the helper's exit status when setup fails; the status
// pipe says why.
const setupExitCode = 125

// HelperMain runs the sandbox helper: it enforces the policy on fd 3 on
// itself and execs the command, or reports a SetupError on fd 4 and
// returns setupExitCode. main calls it, before anything else, when the
// first argument is HelperArg.
func HelperMain() int {
	// One thread does the whole setup, so that per-thread state (the
	// no_new_privs bit, capabilities) is where execve happens.
	runtime.LockOSThread()
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err != nil {
		return setupExitCode // not started by execd: nothing to report to
	}
	status := os.NewFile(statusFD, "status")
	unix.CloseOnExec(statusFD) // EOF on exec is the success signal
	stage, err := runHelperSafely()
	report(status, stage, err)
	return setupExitCode
}

// runHelperSafely turns a panic into a report. (A helper killed before it
// execs, say by the OOM killer, reports nothing: its exit status is then
// taken for the command's.)
func runHelperSafely() (stage string, err error) {
	defer func() {
		if r := recover(); r != nil {
			stage, err = "helper", fmt.Errorf("panic: %v", r)
		}
	}()
	return runHelper()
}

// runHelper only returns on failure, with the stage that failed.
func runHelper() (string, error) {
	p, err := readPolicy(false)
	if err != nil {
		return "policy", err
	}
	roots, err := openRoots(p.Roots)
	if err != nil {
		return "roots", err
	}
	if p.Namespaces {
		if roots, _, err = isolateMounts(p, roots); err != nil {
			return "mount", err
		}
		if err := privateTerminals(); err != nil {
			return "terminals", err
		}
	}
	if p.Terminal != nil {
		if err := openTerminal(p.Terminal); err != nil {
			return "terminal", err
		}
	}
	if err := os.Chdir(p.Dir); err != nil {
		return "chdir", err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "no_new_privs", err
	}
	// Among them CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH, which came as
	// ambient capabilities for the mounts and the lookups above.
	if err := dropCapabilities(); err != nil {
		return "capabilities", err
	}
	if err := restrictFS(p, roots); err != nil {
		return "landlock", err
	}
	if err := installFilter(optionsOf(p)); err != nil {
		return "seccomp", err
	}
	err = syscall.Exec(p.Path, p.Argv, p.Env)
	return "exec", fmt.Errorf("%s: %w", p.Path, err)
}

// readPolicy reads the policy on policyFD: a command's, or with resident
// a launcher's, which names no command.
func readPolicy(resident bool) (*Policy, error) {
	f := os.NewFile(policyFD, "policy")
	if f == nil {
		return nil, errors.New("no policy descriptor")
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if !p.Mode.Enforced() || !resident && (p.Path == "" || len(p.Argv) == 0 || p.Dir == "") {
		return nil, fmt.Errorf("incomplete policy (mode %q, path %q, %d args, dir %q)", p.Mode, p.Path, len(p.Argv), p.Dir)
	}
	return &p, nil
}

// wireError is a SetupError on the status pipe.
type wireError struct {
	Stage   string `json:"stage"`
	Message string `json:"message"`
	Errno   int    `json:"errno,omitempty"`
}

func report(status *os.File, stage string, err error) {
	b, _ := json.Marshal(wire(stage, err))
	_, _ = status.Write(b) // the parent reads until EOF
	_ = status.Close()
}

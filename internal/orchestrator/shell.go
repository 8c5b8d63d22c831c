package orchestrator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ShellKind is the family of a shell, which decides its arguments.
type ShellKind string

// The shell families of SPEC §9.1.
const (
	Bash       ShellKind = "bash"
	Zsh        ShellKind = "zsh"
	Sh         ShellKind = "sh"
	PowerShell ShellKind = "powershell"
	Cmd        ShellKind = "cmd"
)

// Shell is a shell program that runs scripts.
type Shell struct {
	Path string
	Kind ShellKind
}

// Argv returns the argv that runs script in s (SPEC §9.1): a login shell
// (-lc) when login is set, else -c; PowerShell and cmd have their own
// forms.
func (s Shell) Argv(script string, login bool) []string {
	switch s.Kind {
	case PowerShell:
		if login {
			return []string{s.Path, "-Command", script}
		}
		return []string{s.Path, "-NoProfile", "-Command", script}
	case Cmd:
		return []string{s.Path, "/c", script}
	}
	if login {
		return []string{s.Path, "-lc", script}
	}
	return []string{s.Path, "-c", script}
}

// kindOf returns the family of the shell at path from its file name.
func kindOf(path string) (ShellKind, bool) {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(name, ".exe")
	switch name {
	case "bash":
		return Bash, true
	case "zsh":
		return Zsh, true
	case "sh":
		return Sh, true
	case "pwsh", "powershell":
		return PowerShell, true
	case "cmd":
		return Cmd, true
	}
	return "", false
}

// DetectShell returns the shell of user uid from the passwd file (not
// $SHELL, which any parent can set). An unknown, missing or
// non-executable shell falls back to bash found on pathEnv, then /bin/sh.
// The reason for a fallback is returned as a note to log ("" if none).
func DetectShell(passwdFile string, uid int, pathEnv string) (Shell, string) {
	var note string
	path, err := passwdShell(passwdFile, uid)
	switch {
	case err != nil:
		note = fmt.Sprintf("no shell for uid %d in %s: %v", uid, passwdFile, err)
	case !isExecutable(path):
		note = fmt.Sprintf("login shell %s of uid %d is not an executable file", path, uid)
	default:
		if kind, ok := kindOf(path); ok {
			return Shell{Path: path, Kind: kind}, ""
		}
		note = fmt.Sprintf("login shell %s of uid %d is not a supported shell (bash, zsh, sh, pwsh, cmd)", path, uid)
	}
	if bash, err := lookPath("bash", pathEnv, "/"); err == nil {
		return Shell{Path: bash, Kind: Bash}, note + "; using " + bash
	}
	return Shell{Path: "/bin/sh", Kind: Sh}, note + "; using /bin/sh"
}

// ResolveShell returns the shell named by name, a path or a program name
// looked up on pathEnv (the model's exec_command "shell" argument).
func ResolveShell(name, pathEnv, dir string) (Shell, error) {
	path, err := lookPath(name, pathEnv, dir)
	if err != nil {
		return Shell{}, err
	}
	kind, ok := kindOf(path)
	if !ok {
		return Shell{}, fmt.Errorf("shell %s is not supported (want bash, zsh, sh, pwsh or cmd)", name)
	}
	return Shell{Path: path, Kind: kind}, nil
}

// passwdShell returns the 7th field of uid's entry in a passwd(5) file.
func passwdShell(file string, uid int) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return parsePasswdShell(f, uid)
}

func parsePasswdShell(r io.Reader, uid int) (string, error) {
	want := strconv.Itoa(uid)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) == 7 && f[2] == want {
			if f[6] == "" {
				return "", errors.New("empty shell field")
			}
			return f[6], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no entry")
}

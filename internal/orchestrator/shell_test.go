package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestShellArgv(t *testing.T) {
	tests := []struct {
		shell Shell
		login bool
		want  []string
	}{
		{Shell{"/bin/bash", Bash}, true, []string{"/bin/bash", "-lc", "echo hi"}},
		{Shell{"/bin/bash", Bash}, false, []string{"/bin/bash", "-c", "echo hi"}},
		{Shell{"/usr/bin/zsh", Zsh}, true, []string{"/usr/bin/zsh", "-lc", "echo hi"}},
		{Shell{"/bin/sh", Sh}, false, []string{"/bin/sh", "-c", "echo hi"}},
		{Shell{"/opt/pwsh", PowerShell}, true, []string{"/opt/pwsh", "-Command", "echo hi"}},
		{Shell{"/opt/pwsh", PowerShell}, false, []string{"/opt/pwsh", "-NoProfile", "-Command", "echo hi"}},
		{Shell{"cmd.exe", Cmd}, true, []string{"cmd.exe", "/c", "echo hi"}},
	}
	for _, tt := range tests {
		if got := tt.shell.Argv("echo hi", tt.login); !slices.Equal(got, tt.want) {
			t.Errorf("%v.Argv(login=%v) = %q, want %q", tt.shell, tt.login, got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := map[string]ShellKind{
		"/bin/bash": Bash, "/usr/bin/zsh": Zsh, "/bin/sh": Sh, "pwsh": PowerShell,
		"C:/x/powershell.exe": PowerShell, "CMD.EXE": Cmd, "bash.exe": Bash,
		"/usr/bin/fish": "", "/bin/dash": "", "": "",
	}
	for path, want := range tests {
		got, ok := kindOf(path)
		if got != want || ok != (want != "") {
			t.Errorf("kindOf(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}

func TestParsePasswdShell(t *testing.T) {
	passwd := "# comment\nroot:x:0:0:root:/root:/bin/bash\nbad line\nme:x:1000:1000::/home/me:/usr/bin/zsh\nnoshell:x:1001:1001::/:\n"
	tests := []struct {
		uid     int
		want    string
		wantErr bool
	}{{0, "/bin/bash", false}, {1000, "/usr/bin/zsh", false}, {1001, "", true}, {4242, "", true}}
	for _, tt := range tests {
		got, err := parsePasswdShell(strings.NewReader(passwd), tt.uid)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("uid %d: got %q, %v; want %q (error %v)", tt.uid, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDetectShell(t *testing.T) {
	dir := t.TempDir()
	fakeZsh := filepath.Join(dir, "zsh")
	fakeFish := filepath.Join(dir, "fish")
	for _, p := range []string{fakeZsh, fakeFish} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(shell string) string {
		f := filepath.Join(t.TempDir(), "passwd")
		if err := os.WriteFile(f, []byte("u:x:77:77::/:"+shell+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	bash, err := lookPath("bash", os.Getenv("PATH"), "/")
	if err != nil {
		t.Skip("bash is not installed")
	}
	tests := []struct {
		name, passwd string
		want         Shell
		noted        bool
	}{
		{"passwd shell", write(fakeZsh), Shell{fakeZsh, Zsh}, false},
		{"unsupported shell falls back to bash", write(fakeFish), Shell{bash, Bash}, true},
		{"missing shell falls back to bash", write("/nonexistent/zsh"), Shell{bash, Bash}, true},
		{"no entry falls back to bash", filepath.Join(dir, "no-such-passwd"), Shell{bash, Bash}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := DetectShell(tt.passwd, 77, os.Getenv("PATH"))
			if got != tt.want || (note != "") != tt.noted {
				t.Errorf("DetectShell = %v, note %q; want %v (note: %v)", got, note, tt.want, tt.noted)
			}
		})
	}
	if got, _ := DetectShell(filepath.Join(dir, "none"), 77, ""); got != (Shell{"/bin/sh", Sh}) {
		t.Errorf("without bash on PATH: %v, want /bin/sh", got)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, want string
		wantErr          bool
	}{
		{"tool", bin, filepath.Join(bin, "tool"), false},
		{"tool", "/nonexistent:" + bin, filepath.Join(bin, "tool"), false},
		{"tool", "bin", filepath.Join(bin, "tool"), false}, // relative entry: relative to dir
		{"data", bin, "", true},                            // not executable
		{"bin", dir, "", true},                             // a directory
		{"./bin/tool", "", filepath.Join(bin, "tool"), false},
		{filepath.Join(bin, "tool"), "", filepath.Join(bin, "tool"), false},
		{"missing", bin, "", true},
		{"", bin, "", true},
	}
	for _, tt := range tests {
		got, err := lookPath(tt.name, tt.path, dir)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("lookPath(%q, %q) = %q, %v; want %q (error %v)", tt.name, tt.path, got, err, tt.want, tt.wantErr)
		}
	}
}

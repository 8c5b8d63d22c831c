package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
)

// isolate hides the developer's own configuration and EXECD_* variables.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "EXECD_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	return dir
}

func load(t *testing.T, fileContent string, args ...string) (*config, error) {
	t.Helper()
	if fileContent != "" {
		p := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(p, []byte(fileContent), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"--config", p}, args...)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addCommonFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return loadConfig(fs)
}

func TestDefaults(t *testing.T) {
	isolate(t)
	cfg, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if cfg.Cwd != wd || cfg.ApprovalPolicy != "on-request" || cfg.Sandbox.Mode != "workspace-write" ||
		!cfg.Sandbox.FailClosed || cfg.Sandbox.NetworkAccess || cfg.Env.Inherit != "all" ||
		cfg.Tools.ShellType != "unified_exec" || !cfg.Tools.ApplyPatch || !cfg.Tools.AllowLoginShell ||
		cfg.Exec.DefaultTimeout != 10*time.Second || cfg.Exec.MaxOutputTokens != 10000 ||
		cfg.Log.Level != "info" || cfg.Log.Format != "json" || len(cfg.Files) != 0 ||
		!cfg.Shell.Snapshot || cfg.Shell.SnapshotTTL != time.Hour || cfg.Shell.SnapshotTimeout != 10*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestShellSnapshotKeys(t *testing.T) {
	isolate(t)
	t.Setenv("EXECD_SHELL_SNAPSHOT_TIMEOUT", "2s")
	cfg, err := load(t, "[shell]\nsnapshot = false\nsnapshot_ttl = \"5m\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Shell.Snapshot || cfg.Shell.SnapshotTTL != 5*time.Minute || cfg.Shell.SnapshotTimeout != 2*time.Second {
		t.Errorf("shell: %+v", cfg.Shell)
	}
	if _, err := load(t, "[shell]\nsnapshot_ttl = \"0s\"\n"); err == nil || !strings.Contains(err.Error(), "shell.snapshot_ttl") {
		t.Errorf("a zero TTL: %v", err)
	}
}

func TestPolicyPaths(t *testing.T) {
	xdg := isolate(t)
	cwd := t.TempDir()
	cfg, err := load(t, "approval_policy = \"untrusted\"\n[approval]\ntimeout = \"90s\"\nwithout_client_support = \"allow\"\n"+
		"[rules]\nfiles = [\"a.rules\", \"/abs/b.rules\"]\n[audit]\npath = \"audit.jsonl\"", "--cwd", cwd, "--approval", "never")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ApprovalPolicy != "never" || cfg.Approval.Timeout != 90*time.Second || cfg.Approval.WithoutClientSupport != "allow" {
		t.Errorf("approval settings %+v %+v (the flag wins over the file)", cfg.ApprovalPolicy, cfg.Approval)
	}
	want := []string{filepath.Join(cwd, "a.rules"), "/abs/b.rules"}
	if !reflect.DeepEqual(cfg.Rules.Files, want) || cfg.AuditPath != filepath.Join(cwd, "audit.jsonl") ||
		cfg.Rules.AmendFile != filepath.Join(xdg, "execd", "rules", "default.rules") {
		t.Errorf("paths: rules %q, audit %q, amend %q", cfg.Rules.Files, cfg.AuditPath, cfg.Rules.AmendFile)
	}
	if err := os.MkdirAll(filepath.Join(xdg, "execd", "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"z.rules", "default.rules", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(xdg, "execd", "rules", n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Rules.Files = append(cfg.Rules.Files, filepath.Join(xdg, "execd", "rules", "z.rules"))
	got := rulesFiles(cfg)
	want = append(want, filepath.Join(xdg, "execd", "rules", "z.rules"), filepath.Join(xdg, "execd", "rules", "default.rules"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules files %q, want %q (listed first, then the directory's, each once)", got, want)
	}
}

func TestEveryKeyHasADefaultAndNothingElse(t *testing.T) {
	var raw map[string]any
	if err := toml.Unmarshal(defaultsTOML, &raw); err != nil {
		t.Fatal(err)
	}
	flat := map[string]any{}
	if err := flatten("", raw, flat); err != nil {
		t.Fatalf("defaults.toml: %v", err)
	}
	for _, k := range keys {
		if _, ok := flat[k.name]; !ok {
			t.Errorf("key %s has no default in defaults.toml", k.name)
		}
		if _, err := convert(k, flat[k.name]); err != nil {
			t.Errorf("default of %s: %v", k.name, err)
		}
	}
	if len(flat) != len(keys) {
		t.Errorf("defaults.toml has %d keys, the key table %d", len(flat), len(keys))
	}
}

// The documented example must load to exactly the built-in defaults.
func TestExampleConfigIsTheDefaults(t *testing.T) {
	isolate(t)
	example, err := os.ReadFile("../../configs/execd.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := load(t, string(example))
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	got.Files = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("example config = %+v\ndefaults = %+v", got, want)
	}
}

func TestConfigFileErrorsNameTheKey(t *testing.T) {
	isolate(t)
	tests := []struct{ file, want string }{
		{"[sandbox]\nmod = \"x\"", `unknown key "sandbox.mod" (did you mean "sandbox.mode"?)`},
		{"bogus = 1", `unknown key "bogus"`},
		{"[sandbx]\nmode = \"x\"", `unknown key "sandbx" (did you mean "sandbox"?)`},
		{"sandbox = 5", "sandbox: expected a table of settings"},
		{"[sandbox]\nmode = \"yolo\"", `sandbox.mode (config file `},
		{"[sandbox]\nmode = \"yolo\"", `"yolo" is not one of read-only, workspace-write, danger-full-access, external-sandbox`},
		{"[sandbox.mode]\nx = 1", "sandbox.mode (config file"},
		{"[exec]\ndefault_timeout_ms = \"ten\"", `exec.default_timeout_ms (config file`},
		{"[exec]\ndefault_timeout_ms = 0", "0 is below the minimum 1"},
		{"[exec]\ndefault_timeout_ms = 9223372036855", "9223372036855 is above the maximum 9223372036854"},
		{"[exec]\nmax_output_tokens = 1.5", "expected an integer, got float64 1.5"},
		{"[sandbox]\nfail_closed = \"yes\"", `sandbox.fail_closed (config file`},
		{"[sandbox]\nwritable_roots = [1]", "element 0: expected a string"},
		{"[shell_environment_policy]\nset = { A = 1 }", "A: expected a string"},
		{"[shell_environment_policy]\nset = { A = \"" + strings.Repeat("x", 140000) + "\" }", "over the kernel's limit of 131072 for one variable"},
		{"[shell_environment_policy]\nset = { A = \"a\\u0000b\" }", "A: the value holds a NUL byte"},
		{"[approval]\ntimeout = \"soon\"", `expected a positive duration such as "5m" or "90s", got "soon"`},
		{"[rules]\nfiles = [\"\"]", "rules.files (config file"},
		{"[rules]\nfiles = [\"a.rules\", \"\"]", "entry 2 is empty"},
		{"approval_policy = \"sometimes\"", "approval_policy (config file"},
		{"approval_policy = \"sometimes\"", `"sometimes" is not one of untrusted, on-failure, on-request, never`},
		{"[approval]\nwithout_client_support = \"ask\"", "approval.without_client_support (config file"},
		{"[sessions]\nmax = 0", "sessions.max (config file"},
		{"[sessions]\nmax_poll_ms = 1000", "1000 is below the minimum 5000"},
		{"[sandbox]\nwritable_roots = [\"/nonexistent/root\"]", "sandbox.writable_roots (config file"},
		{"[sandbox]\nwritable_roots = [\"/nonexistent/root\"]", "/nonexistent/root: no such file or directory"},
		{"[sandbox]\nwritable_roots = [\"/etc/passwd\"]", "/etc/passwd is not a directory"},
		{"[sandbox]\nwritable_roots = [\"\"]", "entry 1 is empty"},
		{"[sandbox]\nprotected_paths = [\".git\", \"a/b\"]", `sandbox.protected_paths (config file`},
		{"[sandbox]\nprotected_paths = [\"..\"]", `".." is not a name`},
		{"[sandbox\nmode = 1", "line 1"},
		{"cwd = \"/nonexistent/dir\"", "cwd (config file"},
		{"cwd = \"/nonexistent/dir\"", "/nonexistent/dir does not exist"},
	}
	for _, tt := range tests {
		_, err := load(t, tt.file)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %q: error %v; want it to contain %q", tt.file, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("config %q: error spans lines: %q", tt.file, err)
		}
	}
}

func TestDefaultValueOfAnUnbuiltKeyIsAccepted(t *testing.T) {
	isolate(t)
	if _, err := load(t, "approval_policy = \"on-request\"\n[rules]\nfiles = []\n"); err != nil {
		t.Fatal(err)
	}
}

func TestEnvironment(t *testing.T) {
	isolate(t)
	t.Setenv("EXECD_SANDBOX_MODE", "danger-full-access")
	t.Setenv("EXECD_SANDBOX_FAIL_CLOSED", "false")
	t.Setenv("EXECD_EXEC_MAX_OUTPUT_TOKENS", "500")
	t.Setenv("EXECD_SHELL_ENVIRONMENT_POLICY_SET", "MyVar=1, OTHER=a=b")
	t.Setenv("EXECD_SHELL_ENVIRONMENT_POLICY_EXCLUDE", `["A*","b?"]`)
	t.Setenv("EXECD_SHELL_ENVIRONMENT_POLICY_INCLUDE_ONLY", "PATH, HOME")
	t.Setenv("EXECD_NOT_A_KEY", "1")
	t.Setenv("EXECD_SANDBOX", "linux") // a marker from an outer execd
	cfg, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sandbox.Mode != "danger-full-access" || cfg.Sandbox.FailClosed || cfg.Exec.MaxOutputTokens != 500 {
		t.Errorf("scalars from env: %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.Env.Set, map[string]string{"MyVar": "1", "OTHER": "a=b"}) {
		t.Errorf("set from env = %v (case must be kept)", cfg.Env.Set)
	}
	if !reflect.DeepEqual(cfg.Env.Exclude, []string{"A*", "b?"}) || !reflect.DeepEqual(cfg.Env.IncludeOnly, []string{"PATH", "HOME"}) {
		t.Errorf("lists from env: %v %v", cfg.Env.Exclude, cfg.Env.IncludeOnly)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "EXECD_NOT_A_KEY") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	t.Setenv("EXECD_SANDBOX_MODE", "sandboxed")
	if _, err := load(t, ""); err == nil || !strings.Contains(err.Error(), "sandbox.mode (environment variable EXECD_SANDBOX_MODE)") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	isolate(t)
	file := "[sandbox]\nmode = \"danger-full-access\"\n[log]\nlevel = \"debug\"\n"
	cfg, err := load(t, file)
	if err != nil || cfg.Sandbox.Mode != "danger-full-access" || cfg.Log.Level != "debug" {
		t.Fatalf("file: %v %+v", err, cfg)
	}
	t.Setenv("EXECD_SANDBOX_MODE", "external-sandbox")
	if cfg, _ = load(t, file); cfg.Sandbox.Mode != "external-sandbox" {
		t.Errorf("env over file: %s", cfg.Sandbox.Mode)
	}
	if cfg, _ = load(t, file, "--sandbox", "read-only", "--log-level", "warn"); cfg.Sandbox.Mode != "read-only" || cfg.Log.Level != "warn" {
		t.Errorf("flag over env: %s %s", cfg.Sandbox.Mode, cfg.Log.Level)
	}
	if _, err := load(t, file, "--sandbox", "nope"); err == nil || !strings.Contains(err.Error(), "flag --sandbox") {
		t.Errorf("bad flag value: %v", err)
	}
}

func TestConfigFileLocation(t *testing.T) {
	dir := isolate(t)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addCommonFlags(fs)
	_ = fs.Parse([]string{"--config", filepath.Join(dir, "missing.toml")})
	if _, err := loadConfig(fs); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing --config file: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "execd"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "execd", "config.toml")
	if err := os.WriteFile(p, []byte("[shell_environment_policy]\nset = { MixedCase = \"v\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Files, []string{p}) || cfg.Env.Set["MixedCase"] != "v" {
		t.Errorf("default file: files %v set %v", cfg.Files, cfg.Env.Set)
	}
}

func TestSandboxPathsResolve(t *testing.T) {
	isolate(t)
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, "[sandbox]\nwritable_roots = [\"build\", \"/tmp\"]\nprotected_paths = [\".hg\"]\n", "--cwd", cwd)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(cwd, "build"), "/tmp"}; !reflect.DeepEqual(cfg.Sandbox.WritableRoots, want) {
		t.Errorf("writable_roots = %q, want %q", cfg.Sandbox.WritableRoots, want)
	}
	if !reflect.DeepEqual(cfg.Sandbox.ProtectedPaths, []string{".hg"}) {
		t.Errorf("protected_paths = %q", cfg.Sandbox.ProtectedPaths)
	}
}

func TestSandboxCommandFlags(t *testing.T) {
	isolate(t)
	cwd := t.TempDir()
	tests := []struct {
		args []string
		want string // error; "" for none
		mode string
		net  bool
	}{
		{[]string{"--mode", "read-only", "--network"}, "", "read-only", true},
		{[]string{"--writable", "."}, "", "workspace-write", false},
		{[]string{"--mode", "yolo"}, `--mode: unknown sandbox mode "yolo"`, "", false},
		{[]string{"--mode", "read-only", "--sandbox", "danger-full-access"}, "disagree", "", false},
		{[]string{"--writable", "missing"}, "--writable missing: no such file or directory", "", false},
		{[]string{"--writable", "/etc/passwd"}, "--writable /etc/passwd: not a directory", "", false},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addCommonFlags(fs)
		sandboxFlags(fs)
		if err := fs.Parse(append([]string{"--cwd", cwd}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(fs)
		if err != nil {
			t.Fatal(err)
		}
		err = applySandboxFlags(fs, cfg)
		switch {
		case tt.want != "":
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.want)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case cfg.Sandbox.Mode != tt.mode || cfg.Sandbox.NetworkAccess != tt.net:
			t.Errorf("%q: mode %s network %v", tt.args, cfg.Sandbox.Mode, cfg.Sandbox.NetworkAccess)
		}
	}
}

// A relative XDG directory counts as unset (the XDG Base Directory spec
// ignores it): it would name a directory relative to wherever execd
// starts, which nothing protects.
func TestXDGDirRelative(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for value, want := range map[string]string{"": "/home/u/.config", "rel/cfg": "/home/u/.config", "/x/cfg/": "/x/cfg"} {
		t.Setenv("XDG_CONFIG_HOME", value)
		if got := configDir(); got != want {
			t.Errorf("XDG_CONFIG_HOME=%q: configDir = %q, want %q", value, got, want)
		}
	}
	t.Setenv("XDG_STATE_HOME", "state")
	t.Setenv("HOME", "home")
	if got := stateDir(); got != "" {
		t.Errorf("relative XDG_STATE_HOME and HOME: stateDir = %q, want none", got)
	}
}

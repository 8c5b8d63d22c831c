package main

import (
	"github.com/execd/execd/internal/sandbox"
	"github.com/execd/execd/internal/tools"
)

// kind is the type of a configuration value.
type kind int

const (
	kString kind = iota
	kBool
	kInt
	kDuration
	kList // array of strings; in the environment a JSON array or "a,b,c"
	kMap  // table of strings; in the environment a JSON object or "K=V,K2=V2"
)

// keySpec describes one configuration key of SPEC §2.
type keySpec struct {
	name string
	kind kind
	enum []string // allowed values of a string key, if limited
	min  int64    // smallest value of an int key
	max  int64    // largest value of an int key; 0 means no limit
	flag string   // the command-line flag bound to the key, if any
}

// keys is every configuration key, in the order of SPEC §2.
var keys = []keySpec{
	{name: "cwd", kind: kString, flag: "cwd"},
	{name: "approval_policy", kind: kString, enum: []string{"untrusted", "on-failure", "on-request", "never"}, flag: "approval"},
	{name: "approval.timeout", kind: kDuration},
	{name: "approval.without_client_support", kind: kString, enum: []string{"deny", "allow"}},
	{name: "sandbox.mode", kind: kString, enum: modeNames(), flag: "sandbox"},
	{name: "sandbox.writable_roots", kind: kList},
	{name: "sandbox.network_access", kind: kBool},
	{name: "sandbox.allow_unix_sockets", kind: kBool},
	{name: "sandbox.exclude_tmpdir_env_var", kind: kBool},
	{name: "sandbox.exclude_slash_tmp", kind: kBool},
	{name: "sandbox.protected_paths", kind: kList},
	{name: "sandbox.fail_closed", kind: kBool},
	{name: "rules.files", kind: kList},
	{name: "rules.amend_file", kind: kString},
	{name: "shell_environment_policy.inherit", kind: kString, enum: []string{"all", "core", "none"}},
	{name: "shell_environment_policy.ignore_default_excludes", kind: kBool},
	{name: "shell_environment_policy.exclude", kind: kList},
	{name: "shell_environment_policy.set", kind: kMap},
	{name: "shell_environment_policy.include_only", kind: kList},
	{name: "tools.shell_type", kind: kString, enum: []string{"unified_exec", "shell_command", "shell", "disabled"}},
	{name: "tools.apply_patch", kind: kBool},
	{name: "tools.allow_login_shell", kind: kBool},
	{name: "tools.structured_content", kind: kString, enum: []string{"auto", "always", "never"}},
	{name: "shell.snapshot", kind: kBool},
	{name: "shell.snapshot_ttl", kind: kDuration},
	{name: "shell.snapshot_timeout", kind: kDuration},
	{name: "exec.default_timeout_ms", kind: kInt, min: 1, max: tools.MaxTimeoutMs},
	{name: "exec.max_output_tokens", kind: kInt, min: 1},
	{name: "exec.max_concurrent", kind: kInt, min: 1, max: 65536},
	{name: "sessions.max", kind: kInt, min: 1, max: 10000},
	{name: "sessions.max_poll_ms", kind: kInt, min: 5000, max: tools.MaxTimeoutMs},
	{name: "rpc.max_in_flight", kind: kInt, min: 1, max: 65536},
	{name: "log.level", kind: kString, enum: []string{"debug", "info", "warn", "error"}, flag: "log-level"},
	{name: "log.format", kind: kString, enum: []string{"json", "console"}},
	{name: "audit.path", kind: kString},
}

func modeNames() []string {
	names := make([]string, len(sandbox.Modes))
	for i, m := range sandbox.Modes {
		names[i] = string(m)
	}
	return names
}

func lookupKey(name string) (keySpec, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return keySpec{}, false
}

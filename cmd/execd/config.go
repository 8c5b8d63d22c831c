package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

//go:embed defaults.toml
var defaultsTOML []byte

// envPrefix prefixes the environment variable of every key: sandbox.mode
// is EXECD_SANDBOX_MODE.
const envPrefix = "EXECD"

// sandboxMarkers are variables execd sets for commands; seeing them (execd
// inside execd) is not a configuration mistake.
var sandboxMarkers = []string{"EXECD_SANDBOX", "EXECD_SANDBOX_NETWORK_DISABLED"}

// config is the configuration after layering and validation (SPEC §2). It
// is immutable once loaded.
type config struct {
	Cwd            string
	ApprovalPolicy string
	Approval       struct {
		Timeout              time.Duration
		WithoutClientSupport string
	}
	Rules struct {
		Files     []string // absolute
		AmendFile string   // absolute; "" when there is no config directory
	}
	AuditPath string // absolute, or ""
	Sandbox   struct {
		Mode                string
		WritableRoots       []string // absolute
		NetworkAccess       bool
		AllowUnixSockets    bool
		ExcludeTmpdirEnvVar bool
		ExcludeSlashTmp     bool
		ProtectedPaths      []string // names
		FailClosed          bool
	}
	Env struct {
		Inherit               string
		IgnoreDefaultExcludes bool
		Exclude               []string
		Set                   map[string]string
		IncludeOnly           []string
	}
	Tools struct {
		ShellType       string
		ApplyPatch      bool
		AllowLoginShell bool
		Structured      string
	}
	Shell struct {
		Snapshot        bool
		SnapshotTTL     time.Duration
		SnapshotTimeout time.Duration
	}
	Exec struct {
		DefaultTimeout  time.Duration
		MaxOutputTokens int
		MaxConcurrent   int
	}
	Sessions struct {
		Max         int
		MaxPollTime time.Duration
	}
	RPC struct {
		MaxInFlight int
	}
	Log struct {
		Level  string
		Format string
	}

	// Files lists the configuration files that were read.
	Files []string
	// Warnings are problems that do not stop execd, to be logged.
	Warnings []string
}

// configError is a configuration problem: one line on stderr, exit 2.
type configError struct{ msg string }

func (e *configError) Error() string { return "config: " + e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// loader layers the sources of SPEC §2: flag > environment > file >
// embedded defaults.
type loader struct {
	v        *viper.Viper
	flags    *pflag.FlagSet
	defaults map[string]any // flattened defaults
	file     string         // the config file read, if any
	fileRaw  map[string]any // its contents, with the case of keys kept
	fileKeys map[string]bool
}

// loadConfig reads the configuration. flags must hold the common flags
// (see addCommonFlags), already parsed.
func loadConfig(flags *pflag.FlagSet) (*config, error) {
	l := &loader{v: viper.New(), flags: flags, fileKeys: map[string]bool{}}
	if err := l.layer(); err != nil {
		return nil, err
	}
	values := map[string]any{}
	for _, k := range keys {
		val, err := l.value(k)
		if err != nil {
			return nil, err
		}
		values[k.name] = val
	}
	cfg := assign(values)
	cwd, err := resolveCwd(cfg.Cwd)
	if err != nil {
		k, _ := lookupKey("cwd")
		return nil, configErrorf("cwd (%s): %v", l.source(k), err)
	}
	cfg.Cwd = cwd
	if err := l.checkSandbox(cfg); err != nil {
		return nil, err
	}
	if err := l.resolvePolicyPaths(cfg); err != nil {
		return nil, err
	}
	if l.file != "" {
		cfg.Files = []string{l.file}
	}
	cfg.Warnings = unknownEnv()
	return cfg, nil
}

func (l *loader) layer() error {
	var defaults map[string]any
	if err := toml.Unmarshal(defaultsTOML, &defaults); err != nil {
		return fmt.Errorf("embedded defaults: %w", err) // a build defect, not the user's
	}
	l.defaults = map[string]any{}
	if err := flatten("", defaults, l.defaults); err != nil {
		return fmt.Errorf("embedded defaults: %w", err)
	}
	for name, val := range l.defaults {
		l.v.SetDefault(name, val)
	}
	for _, k := range keys {
		// Each key is bound to its own variable. AutomaticEnv would also
		// read EXECD_SANDBOX, the marker an outer execd sets, as a value
		// for "sandbox" that shadows every sandbox.* key.
		if err := l.v.BindEnv(k.name, envName(k.name)); err != nil {
			return fmt.Errorf("bind %s: %w", envName(k.name), err)
		}
		if k.flag != "" {
			if err := l.v.BindPFlag(k.name, l.flags.Lookup(k.flag)); err != nil {
				return fmt.Errorf("bind --%s: %w", k.flag, err)
			}
		}
	}
	return l.readFile()
}

// readFile reads the config file: --config, else the default location,
// which may be missing.
func (l *loader) readFile() error {
	path, _ := l.flags.GetString("config")
	explicit := path != ""
	if !explicit {
		dir := configDir()
		if dir == "" {
			return nil
		}
		path = filepath.Join(dir, "execd", "config.toml")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil
	}
	if err != nil {
		return configErrorf("config file %s: %v", path, errors.Unwrap(err))
	}
	raw := map[string]any{}
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return configErrorf("config file %s: line %d, column %d: %v", path, row, col, de.Error())
		}
		return configErrorf("config file %s: %v", path, err)
	}
	flat := map[string]any{}
	if err := flatten("", raw, flat); err != nil {
		return configErrorf("config file %s: %v", path, err)
	}
	for name := range flat {
		l.fileKeys[name] = true
	}
	l.file, l.fileRaw = path, raw
	// viper lower-cases the keys of the map it merges, in place; fileRaw
	// keeps the case of variable names in shell_environment_policy.set.
	return l.v.MergeConfigMap(deepCopy(raw))
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopy(sub)
		}
		out[k] = v
	}
	return out
}

// resolveCwd makes the turn directory absolute and checks that it is a
// directory; "" means the current directory.
func resolveCwd(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s does not exist", dir)
	case err != nil:
		return "", err
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return abs, nil
}

// configDir is $XDG_CONFIG_HOME, else ~/.config, else "".
func configDir() string { return xdgDir("XDG_CONFIG_HOME", ".config") }

// xdgDir is the directory the XDG variable names, else $HOME joined with
// fallback, else "". A relative value counts as unset (the XDG Base
// Directory spec says to ignore it): it would name a directory relative
// to wherever execd happens to start, which nothing protects.
func xdgDir(variable string, fallback ...string) string {
	if d := os.Getenv(variable); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(append([]string{h}, fallback...)...)
	}
	return ""
}

// flatten turns nested tables into dotted keys, checking every key
// against the key table. Values of map keys stay tables.
func flatten(prefix string, table map[string]any, out map[string]any) error {
	for name, val := range table {
		full := name
		if prefix != "" {
			full = prefix + "." + name
		}
		if _, known := lookupKey(full); known {
			out[full] = val
			continue
		}
		sub, isTable := val.(map[string]any)
		if !isSection(full) {
			return unknownKeyError(full)
		}
		if !isTable {
			return fmt.Errorf("%s: expected a table of settings, got %s", full, describeValue(val))
		}
		if err := flatten(full, sub, out); err != nil {
			return err
		}
	}
	return nil
}

// isSection reports whether name is a table that contains keys.
func isSection(name string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k.name, name+".") {
			return true
		}
	}
	return false
}

func unknownKeyError(name string) error {
	msg := fmt.Sprintf("unknown key %q", name)
	if s := suggestKey(name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return errors.New(msg)
}

// suggestKey returns the known key or table closest to name, if it is
// close.
func suggestKey(name string) string {
	var candidates []string
	for _, k := range keys {
		candidates = append(candidates, k.name)
		if section, _, ok := strings.Cut(k.name, "."); ok {
			candidates = append(candidates, section)
		}
	}
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func envName(key string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// source names where the effective value of k came from, for messages.
func (l *loader) source(k keySpec) string {
	if k.flag != "" && l.flags.Changed(k.flag) {
		return "flag --" + k.flag
	}
	if v, ok := os.LookupEnv(envName(k.name)); ok && v != "" {
		return "environment variable " + envName(k.name)
	}
	if l.fileKeys[k.name] {
		return "config file " + l.file
	}
	return "default"
}

// value returns the validated value of k.
func (l *loader) value(k keySpec) (any, error) {
	var raw any
	if k.kind == kMap {
		raw = l.rawMap(k) // viper lower-cases map keys; variable names are case-sensitive
	} else {
		raw = l.v.Get(k.name)
	}
	val, err := convert(k, raw)
	if err != nil {
		return nil, configErrorf("%s (%s): %v", k.name, l.source(k), err)
	}
	return val, nil
}

// rawMap finds a map key's value in the highest layer that sets it.
func (l *loader) rawMap(k keySpec) any {
	if v, ok := os.LookupEnv(envName(k.name)); ok && v != "" {
		return v
	}
	if l.fileKeys[k.name] {
		var cur any = l.fileRaw
		for _, part := range strings.Split(k.name, ".") {
			table, _ := cur.(map[string]any)
			cur = table[part]
		}
		return cur
	}
	return l.defaults[k.name]
}

// convert checks raw against k and returns a string, bool, int64,
// time.Duration, []string or map[string]string. Strings (from the
// environment or flags) are parsed for the other kinds.
func convert(k keySpec, raw any) (any, error) {
	switch k.kind {
	case kString:
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("expected a string, got %s", describeValue(raw))
		}
		if len(k.enum) > 0 && !slices.Contains(k.enum, s) {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(k.enum, ", "))
		}
		return s, nil
	case kBool:
		return toBool(raw)
	case kInt:
		n, err := toInt(raw)
		switch {
		case err != nil:
		case n < k.min:
			err = fmt.Errorf("%d is below the minimum %d", n, k.min)
		case k.max != 0 && n > k.max:
			err = fmt.Errorf("%d is above the maximum %d", n, k.max)
		}
		return n, err
	case kDuration:
		s, ok := raw.(string)
		d, err := time.ParseDuration(s)
		if !ok || err != nil || d <= 0 {
			return nil, fmt.Errorf("expected a positive duration such as \"5m\" or \"90s\", got %s", describeValue(raw))
		}
		return d, nil
	case kList:
		return toList(raw)
	case kMap: // shell_environment_policy.set, the only map
		m, err := toMap(raw)
		if err != nil {
			return nil, err
		}
		return m, checkEnvSet(m.(map[string]string))
	}
	return nil, fmt.Errorf("unknown kind %d", k.kind)
}

func toBool(raw any) (any, error) {
	switch v := raw.(type) {
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("expected true or false, got %s", describeValue(raw))
}

func toInt(raw any) (int64, error) {
	switch v := raw.(type) {
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case float64:
		if v == float64(int64(v)) {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("expected an integer, got %s", describeValue(raw))
}

func toList(raw any) (any, error) {
	if s, ok := raw.(string); ok {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "[") {
			var l []string
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				return nil, fmt.Errorf("expected a JSON array of strings, got %q", s)
			}
			return nonNil(l), nil
		}
		var l []string
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				l = append(l, part)
			}
		}
		return nonNil(l), nil
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("expected an array of strings, got %s", describeValue(raw))
	}
	l := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("element %d: expected a string, got %s", i, describeValue(it))
		}
		l = append(l, s)
	}
	return l, nil
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// checkEnvSet refuses variables no command could be started with: a NUL
// byte, an = in a name, or NAME=VALUE over the kernel's limit for one.
func checkEnvSet(set map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		val := set[name]
		switch n := len(name) + 1 + len(val); {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return fmt.Errorf("%q: not a variable name", name)
		case strings.ContainsRune(val, 0):
			return fmt.Errorf("%s: the value holds a NUL byte, which no environment can carry", name)
		case n > orchestrator.MaxArgStrlen:
			return fmt.Errorf("%s: %d bytes with its name is over the kernel's limit of %d for one variable (MAX_ARG_STRLEN); "+
				"put the value in a file and set its path", name, n, orchestrator.MaxArgStrlen)
		}
	}
	return nil
}

func toMap(raw any) (any, error) {
	out := map[string]string{}
	switch v := raw.(type) {
	case map[string]any:
		for name, val := range v {
			s, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("%s: expected a string, got %s", name, describeValue(val))
			}
			out[name] = s
		}
		return out, nil
	case string:
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "{") {
			if err := json.Unmarshal([]byte(v), &out); err != nil {
				return nil, fmt.Errorf("expected a JSON object of strings, got %q", v)
			}
			return out, nil
		}
		for pair := range strings.SplitSeq(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("expected NAME=VALUE pairs separated by commas, got %q", pair)
			}
			out[name] = val
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a table of strings, got %s", describeValue(raw))
}

func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	case bool, int64, float64, int:
		return fmt.Sprintf("%T %v", v, v)
	}
	return fmt.Sprintf("a %T", v)
}

// unknownEnv warns about EXECD_* variables that name no key (SPEC §2:
// logged and ignored).
func unknownEnv() []string {
	known := map[string]bool{}
	for _, k := range keys {
		known[envName(k.name)] = true
	}
	for _, m := range sandboxMarkers {
		known[m] = true
	}
	var warnings []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") && !known[name] {
			warnings = append(warnings, fmt.Sprintf("ignoring environment variable %s: no configuration key matches it", name))
		}
	}
	slices.Sort(warnings)
	return warnings
}

// assign builds the config from validated values.
func assign(v map[string]any) *config {
	c := &config{}
	c.Cwd = v["cwd"].(string)
	c.ApprovalPolicy = v["approval_policy"].(string)
	c.Approval.Timeout = v["approval.timeout"].(time.Duration)
	c.Approval.WithoutClientSupport = v["approval.without_client_support"].(string)
	c.Rules.Files = v["rules.files"].([]string)
	c.Rules.AmendFile = v["rules.amend_file"].(string)
	c.AuditPath = v["audit.path"].(string)
	c.Sandbox.Mode = v["sandbox.mode"].(string)
	c.Sandbox.WritableRoots = v["sandbox.writable_roots"].([]string)
	c.Sandbox.NetworkAccess = v["sandbox.network_access"].(bool)
	c.Sandbox.AllowUnixSockets = v["sandbox.allow_unix_sockets"].(bool)
	c.Sandbox.ExcludeTmpdirEnvVar = v["sandbox.exclude_tmpdir_env_var"].(bool)
	c.Sandbox.ExcludeSlashTmp = v["sandbox.exclude_slash_tmp"].(bool)
	c.Sandbox.ProtectedPaths = v["sandbox.protected_paths"].([]string)
	c.Sandbox.FailClosed = v["sandbox.fail_closed"].(bool)
	c.Env.Inherit = v["shell_environment_policy.inherit"].(string)
	c.Env.IgnoreDefaultExcludes = v["shell_environment_policy.ignore_default_excludes"].(bool)
	c.Env.Exclude = v["shell_environment_policy.exclude"].([]string)
	c.Env.Set = v["shell_environment_policy.set"].(map[string]string)
	c.Env.IncludeOnly = v["shell_environment_policy.include_only"].([]string)
	c.Tools.ShellType = v["tools.shell_type"].(string)
	c.Tools.ApplyPatch = v["tools.apply_patch"].(bool)
	c.Tools.AllowLoginShell = v["tools.allow_login_shell"].(bool)
	c.Tools.Structured = v["tools.structured_content"].(string)
	c.Shell.Snapshot = v["shell.snapshot"].(bool)
	c.Shell.SnapshotTTL = v["shell.snapshot_ttl"].(time.Duration)
	c.Shell.SnapshotTimeout = v["shell.snapshot_timeout"].(time.Duration)
	c.Exec.DefaultTimeout = time.Duration(v["exec.default_timeout_ms"].(int64)) * time.Millisecond
	c.Exec.MaxOutputTokens = int(v["exec.max_output_tokens"].(int64))
	c.Exec.MaxConcurrent = int(v["exec.max_concurrent"].(int64))
	c.Sessions.Max = int(v["sessions.max"].(int64))
	c.Sessions.MaxPollTime = time.Duration(v["sessions.max_poll_ms"].(int64)) * time.Millisecond
	c.RPC.MaxInFlight = int(v["rpc.max_in_flight"].(int64))
	c.Log.Level = v["log.level"].(string)
	c.Log.Format = v["log.format"].(string)
	return c
}

// resolvePolicyPaths makes the paths of rules.* and audit.path absolute:
// relative ones resolve against cwd; the amend file defaults to
// default.rules in the rules directory (SPEC §2). Whether the files load
// is checked at start, where a bad rules file is reported, not fatal.
func (l *loader) resolvePolicyPaths(cfg *config) error {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cfg.Cwd, p)
	}
	for i, f := range cfg.Rules.Files {
		if f == "" {
			k, _ := lookupKey("rules.files")
			return configErrorf("rules.files (%s): entry %d is empty", l.source(k), i+1)
		}
		cfg.Rules.Files[i] = abs(f)
	}
	cfg.Rules.AmendFile = abs(cfg.Rules.AmendFile)
	if cfg.Rules.AmendFile == "" {
		if dir := rulesDir(); dir != "" {
			cfg.Rules.AmendFile = filepath.Join(dir, "default.rules")
		}
	}
	cfg.AuditPath = abs(cfg.AuditPath)
	return nil
}

// rulesDir is where rules files are found without being listed:
// $XDG_CONFIG_HOME/execd/rules, or "" without a config directory.
func rulesDir() string {
	dir := configDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "execd", "rules")
}

// checkSandbox validates the sandbox paths: writable roots are existing
// directories (relative ones resolve against cwd) and protected paths
// are plain names, since they are looked up directly inside each root
// (SPEC §8.2).
func (l *loader) checkSandbox(cfg *config) error {
	rootsKey, _ := lookupKey("sandbox.writable_roots")
	for i, r := range cfg.Sandbox.WritableRoots {
		if r == "" {
			return configErrorf("sandbox.writable_roots (%s): entry %d is empty", l.source(rootsKey), i+1)
		}
		if !filepath.IsAbs(r) {
			r = filepath.Join(cfg.Cwd, r)
		}
		fi, err := os.Stat(r)
		switch {
		case err != nil:
			return configErrorf("sandbox.writable_roots (%s): %s: %v", l.source(rootsKey), r, errors.Unwrap(err))
		case !fi.IsDir():
			return configErrorf("sandbox.writable_roots (%s): %s is not a directory", l.source(rootsKey), r)
		}
		cfg.Sandbox.WritableRoots[i] = r
	}
	namesKey, _ := lookupKey("sandbox.protected_paths")
	for _, n := range cfg.Sandbox.ProtectedPaths {
		if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '/') {
			return configErrorf("sandbox.protected_paths (%s): %q is not a name: entries are names looked up directly inside each writable root, such as \".git\"",
				l.source(namesKey), n)
		}
	}
	return nil
}

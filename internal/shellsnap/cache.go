package shellsnap

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/fspath"
)

// Defaults of [Options].
const (
	DefaultTTL     = time.Hour
	DefaultTimeout = 10 * time.Second
)

// waitSlack is how much longer than the time bound a caller waits for a
// snapshot another is taking: the bound's kill and the reaping after it.
const waitSlack = time.Second

// supersededFor is how long the files of a snapshot that was replaced
// stay: a command given their path a moment before may not have read
// them yet.
const supersededFor = time.Minute

// maxFuncScan bounds what is read of each startup file to find sh's
// functions.
const maxFuncScan = 256 << 10

// maxEntries bounds the snapshots kept: a model that names many
// directories must not fill execd's (in memory, as /run is). The one
// taken longest ago makes room.
const maxEntries = 32

// maxSuperseded bounds the replaced snapshots kept for a while (see
// supersededFor): past it the one replaced longest ago goes at once.
const maxSuperseded = 32

// MaxSize bounds a snapshot's text: with maxEntries and maxSuperseded,
// execd's directory holds at most 32 MiB.
const MaxSize = 512 << 10

// Runner runs argv with the environment env in dir, stdin /dev/null, and
// returns what it wrote, each stream bounded. It kills the process (and
// what it left running) when ctx ends, and returns once it is gone. The
// error is for a process that could not be run at all.
type Runner func(ctx context.Context, argv, env []string, dir string) (Result, error)

// Result is how a Runner's process ended.
type Result struct {
	Stdout, Stderr []byte
	Truncated      bool // a stream was longer than the Runner keeps
	ExitCode       int
	TimedOut       bool // ctx ended first
}

// Request is a login shell a caller is about to run.
type Request struct {
	Kind  Kind
	Shell string // the shell's path
	// Scope separates snapshots no caller may share: one taken inside
	// the sandbox is never used outside it.
	Scope string
	// Env is the environment the shell starts with; Dir where it starts.
	Env []string
	Dir string
	// Files returns the startup files the login shell reads (missing ones
	// too: one that appears changes what it reads). It is called when a
	// snapshot is taken.
	Files func() []string
	// Run runs the shell to take the snapshot, as it would run the
	// command: in the same sandbox.
	Run Runner
}

// key is what snapshots are kept by.
func (r Request) key() string {
	h := sha256.New()
	for _, kv := range r.Env {
		io.WriteString(h, kv)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%x", r.Kind, r.Shell, r.Scope, r.Dir, h.Sum(nil))
}

// Options configures a [Cache].
type Options struct {
	// Dir is the directory the snapshots are written in: made by the
	// caller, private to it, out of the commands' reach, and a path
	// without characters a shell would expand (bash expands BASH_ENV).
	// Required.
	Dir string
	// TTL is how long a snapshot is used; 0 means DefaultTTL.
	TTL time.Duration
	// Timeout bounds taking one; 0 means DefaultTimeout.
	Timeout time.Duration
	// Keep filters the exported variables a snapshot sets; nil keeps all.
	Keep Filter
	// Logger gets one line when a snapshot is taken and one when a
	// profile cannot be snapshotted; nil means none.
	Logger *zap.Logger
}

// Cache takes and keeps snapshots. Create it with [New].
type Cache struct {
	opts   Options
	ctx    context.Context // ends at Close: the takes stop
	cancel context.CancelFunc
	takes  sync.WaitGroup // one goroutine per snapshot being taken

	mu      sync.Mutex
	entries map[string]*entry // guarded by mu: the current snapshot of each key
	seq     int               // guarded by mu: numbers the files
	old     []superseded      // guarded by mu: files of replaced snapshots
	closed  bool              // guarded by mu
}

// entry is one snapshot, being taken until done is closed.
type entry struct {
	done chan struct{} // closed by take
	// Set before done is closed, then read only.
	snap   *Snapshot
	why    string // why there is no snapshot
	stamps []stamp
	at     time.Time
	cost   time.Duration // what the dump's login shell took
	// transient: the shell could not be run at all (a directory removed,
	// execd shutting down): the next call tries again.
	transient bool
}

type superseded struct {
	path string
	at   time.Time
}

// New returns a Cache writing in opts.Dir.
func New(opts Options) (*Cache, error) {
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, errors.New("shellsnap: an absolute directory is required")
	}
	if strings.Trim(opts.Dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+,:@=-") != "" {
		return nil, fmt.Errorf("shellsnap: %q has characters a shell would expand", opts.Dir)
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Keep == nil {
		opts.Keep = func(string, string) bool { return true }
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{opts: opts, ctx: ctx, cancel: cancel, entries: map[string]*entry{}}, nil
}

// Dir returns the directory the snapshots are written in.
func (c *Cache) Dir() string { return c.opts.Dir }

// TTL returns how long a snapshot is used.
func (c *Cache) TTL() time.Duration { return c.opts.TTL }

// Timeout returns the bound on taking a snapshot.
func (c *Cache) Timeout() time.Duration { return c.opts.Timeout }

// Get returns the snapshot for req, taking it (once for all concurrent
// callers) when there is none, or when a startup file changed or the TTL
// passed since it was taken. It returns nil and why when the caller must
// run the real login shell: the profile cannot be snapshotted, the
// snapshot is not ready within the time bound, or ctx ended.
func (c *Cache) Get(ctx context.Context, req Request) (*Snapshot, string) {
	// Kept by the directory's physical path: a symlink a command
	// retargets leads to another snapshot, not to another's.
	dir, err := filepath.EvalSymlinks(req.Dir)
	if err != nil {
		return nil, fmt.Sprintf("the directory: %v", err)
	}
	req.Dir = dir
	key, called := req.key(), time.Now()
	deadline := time.NewTimer(c.opts.Timeout + waitSlack)
	defer deadline.Stop()
	for range 2 { // a second time only when the one found was stale
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, "execd is shutting down"
		}
		e := c.entries[key]
		if e == nil && len(c.entries) >= maxEntries && !c.evict() {
			c.mu.Unlock()
			return nil, fmt.Sprintf("%d snapshots are being taken", maxEntries)
		}
		if e == nil {
			e = c.begin(key, req, nil)
		}
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, "the call ended while the snapshot was taken"
		case <-deadline.C:
			return nil, "the snapshot was still being taken"
		}
		// One taken since this call came is used whatever changed
		// meanwhile: the next call takes another.
		if !e.at.Before(called) || c.fresh(e) {
			return e.snap, e.why
		}
		c.mu.Lock()
		if c.entries[key] == e && !c.closed {
			c.begin(key, req, e)
		}
		c.mu.Unlock()
	}
	return nil, "the startup files kept changing"
}

// evict forgets the snapshot taken longest ago, if one is taken, and
// reports whether it did; its files go later (see superseded). c.mu is
// held.
func (c *Cache) evict() bool {
	var oldest string
	for k, e := range c.entries {
		select {
		case <-e.done:
		default:
			continue
		}
		if o := c.entries[oldest]; o == nil || e.at.Before(o.at) {
			oldest = k
		}
	}
	e := c.entries[oldest]
	if e == nil {
		return false
	}
	delete(c.entries, oldest)
	if e.snap != nil {
		c.retire(e.snap.path)
	}
	return true
}

// retire keeps the files at path, of a snapshot no call gets any more,
// for supersededFor, or until maxSuperseded later ones are. c.mu is
// held.
func (c *Cache) retire(path string) {
	c.old = append(c.old, superseded{path, time.Now()})
	if len(c.old) > maxSuperseded {
		_ = os.RemoveAll(c.old[0].path) // ours, small, in memory: under c.mu
		c.old = slices.Delete(c.old, 0, 1)
	}
}

// fresh reports whether e is still to be used: within the TTL and with
// every startup file as it was.
func (c *Cache) fresh(e *entry) bool {
	if e.transient || time.Since(e.at) >= c.opts.TTL {
		return false
	}
	for _, s := range e.stamps {
		if !s.same() {
			return false
		}
	}
	return true
}

// begin starts taking the snapshot of key, replacing prev. c.mu is held.
func (c *Cache) begin(key string, req Request, prev *entry) *entry {
	e := &entry{done: make(chan struct{})}
	c.entries[key] = e
	if prev != nil && prev.snap != nil {
		c.retire(prev.snap.path)
	}
	c.takes.Go(func() { c.take(e, req, prev) })
	return e
}

// take takes e's snapshot and logs the outcome: a profile that cannot be
// snapshotted once for each reason in a row.
func (c *Cache) take(e *entry, req Request, prev *entry) {
	defer close(e.done)
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	files := req.Files()
	// Stamped before the profile runs: a file changed meanwhile makes
	// the next call take a new snapshot.
	e.stamps = stampAll(files)
	e.at = time.Now()
	snap, err := c.snapshot(ctx, req, files, e)
	log := c.opts.Logger.With(zap.String("shell", req.Shell), zap.String("scope", req.Scope))
	if err != nil {
		e.why = err.Error()
		if prev == nil || prev.why != e.why {
			log.Warn("shell snapshot: commands run the login shell itself", zap.String("reason", e.why))
		}
		return
	}
	e.snap = snap
	log.Info("shell snapshot taken", zap.String("path", snap.path), zap.Duration("profile", e.cost),
		zap.Int("startup_files", len(files)))
}

// snapshot runs the dump in a login shell, writes the snapshot and checks
// that a shell runs it cleanly.
func (c *Cache) snapshot(ctx context.Context, req Request, files []string, e *entry) (*Snapshot, error) {
	marker := "execd" + rand.Text()
	var funcs []string
	if req.Kind == Sh {
		funcs = funcNamesIn(files)
	}
	t0 := time.Now()
	res, err := req.Run(ctx, []string{req.Shell, "-lc", DumpScript(req.Kind, marker, funcs)}, req.Env, req.Dir)
	e.cost = time.Since(t0)
	if err != nil {
		e.transient = true
		return nil, fmt.Errorf("the login shell could not be run: %w", err)
	}
	st, err := c.check(req, res, marker)
	if err != nil {
		return nil, err
	}
	text := render(req.Kind, st, req.Env, c.opts.Keep)
	if len(text) > MaxSize {
		return nil, fmt.Errorf("what the profile left makes a snapshot of %d KiB, more than %d KiB", len(text)>>10, MaxSize>>10)
	}
	snap, err := c.write(req.Kind, text)
	if err != nil {
		return nil, fmt.Errorf("write the snapshot: %w", err)
	}
	argv, env := snap.Command([]string{req.Shell, "-lc", ":"}, req.Env)
	res, err = req.Run(ctx, argv, env, req.Dir)
	switch {
	case err != nil:
		err = fmt.Errorf("the shell could not be run with the snapshot: %w", err)
	case res.TimedOut:
		err = fmt.Errorf("the shell did not run the snapshot within %s", c.opts.Timeout)
	case len(res.Stdout)+len(res.Stderr) > 0 || res.ExitCode != 0:
		out := append(res.Stdout, res.Stderr...)
		line, _, _ := strings.Cut(string(out), "\n")
		err = fmt.Errorf("the shell does not run the snapshot cleanly (status %d: %q)", res.ExitCode, line)
	}
	if err != nil {
		_ = os.RemoveAll(snap.path)
		return nil, err
	}
	return snap, nil
}

// check reads the dump's result; errors say why it cannot stand in for
// the profile.
func (c *Cache) check(req Request, res Result, marker string) (*state, error) {
	if res.TimedOut {
		return nil, fmt.Errorf("the profile did not finish within %s", c.opts.Timeout)
	}
	st, err := Parse(req.Kind, marker, res.Stdout, res.Stderr)
	var pe *PrintedError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case res.ExitCode != 0:
		return nil, fmt.Errorf("the login shell exited with status %d", res.ExitCode)
	case res.Truncated:
		return nil, errors.New("what the profile left is more than execd reads")
	case err != nil:
		return nil, err
	case len(st.shFuncs) > 0:
		return nil, fmt.Errorf("the profile defines shell functions (%s), which sh cannot list", strings.Join(st.shFuncs, ", "))
	case definesBuiltin.MatchString(st.funcs):
		return nil, errors.New("the profile defines a function named builtin, which the snapshot relies on")
	}
	if st.pwd != req.Dir { // the physical path Get resolved
		return nil, fmt.Errorf("the profile changes the directory (to %s)", st.pwd)
	}
	return st, nil
}

// zshEnv is the .zshenv of a zsh snapshot's directory: zsh reads it first
// (after /etc/zshenv, which a login shell reads too), and its global
// files (/etc/zprofile, /etc/zlogin) are turned off; the snapshot is the
// directory's .zlogin, read last.
const zshEnv = "\\builtin unsetopt global_rcs\n"

// write writes text as a snapshot for kind: a file, or for zsh a
// directory.
func (c *Cache) write(kind Kind, text string) (*Snapshot, error) {
	c.mu.Lock()
	c.seq++
	n := c.seq
	now := time.Now()
	var old []string
	c.old = slices.DeleteFunc(c.old, func(s superseded) bool {
		if now.Sub(s.at) < supersededFor {
			return false
		}
		old = append(old, s.path)
		return true
	})
	c.mu.Unlock()
	for _, p := range old {
		_ = os.RemoveAll(p) // ours; a failure leaves it for Close
	}
	if kind != Zsh {
		path := filepath.Join(c.opts.Dir, strconv.Itoa(n)+".sh")
		return &Snapshot{kind: kind, path: path}, writeFile(path, text)
	}
	dir := filepath.Join(c.opts.Dir, strconv.Itoa(n))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	snap := &Snapshot{kind: kind, path: dir}
	if err := writeFile(filepath.Join(dir, ".zshenv"), zshEnv); err != nil {
		return snap, err
	}
	return snap, writeFile(filepath.Join(dir, ".zlogin"), text)
}

// writeFile creates path, which must not exist, with mode 0600.
func writeFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscallNoFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// funcNamesIn returns the names files seem to define as functions.
func funcNamesIn(files []string) []string {
	var names []string
	for _, f := range files {
		fh, err := fspath.OpenRegular(f, 0) // a FIFO put there must not hang the take
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(fh, maxFuncScan))
		_ = fh.Close()
		names = append(names, FuncNames(string(b))...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Info is what is known of a request's snapshot, for execd doctor.
type Info struct {
	Path string // the snapshot's file or directory; "" when there is none
	Why  string // why there is none
	// Cost is what the login shell of the dump took: about what the
	// profile costs each command that runs it.
	Cost time.Duration
}

// Info returns what is known of req's snapshot, and false when none was
// taken or is being taken.
func (c *Cache) Info(req Request) (Info, bool) {
	if dir, err := filepath.EvalSymlinks(req.Dir); err == nil {
		req.Dir = dir
	}
	c.mu.Lock()
	e := c.entries[req.key()]
	c.mu.Unlock()
	if e == nil {
		return Info{}, false
	}
	select {
	case <-e.done:
	default:
		return Info{}, false
	}
	i := Info{Why: e.why, Cost: e.cost}
	if e.snap != nil {
		i.Path = e.snap.path
	}
	return i, true
}

// Close stops the takes under way, waits for them, and removes the
// snapshots and their directory. Get then returns none.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.takes.Wait()
	_ = os.RemoveAll(c.opts.Dir)
}

// Snapshot is a snapshot of a profile, written.
type Snapshot struct {
	kind Kind
	path string
}

// Path returns the snapshot's file (for zsh its directory).
func (s *Snapshot) Path() string { return s.path }

// Command returns the argv and environment that run the login shell argv
// ([SHELL, -lc, SCRIPT]), which starts with env, with the snapshot in
// place of the profile (see the package doc).
func (s *Snapshot) Command(argv, env []string) ([]string, []string) {
	shell, script := argv[0], argv[2]
	switch s.kind {
	case Bash:
		return []string{shell, "--noprofile", "-lc", script}, setEnv(env, "BASH_ENV", s.path)
	case Zsh:
		return slices.Clone(argv), setEnv(env, "ZDOTDIR", s.path)
	}
	return []string{shell, "-c", ". " + quote(s.path) + `; eval "shift;$1"`, shell, script}, env
}

// setEnv returns env with name set to value.
func setEnv(env []string, name, value string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(out, name+"="+value)
}

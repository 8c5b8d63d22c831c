package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/execd/execd/internal/patch"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// newWorkspace is an orchestrator in workspace-write whose only writable
// root is its cwd, with .git protected, enforced on this host (patches go
// ahead unasked through the applier, in the sandbox); it skips the test
// on a kernel without the sandbox.
func newWorkspace(t *testing.T, p policy.ApprovalPolicy) *Orchestrator {
	t.Helper()
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite,
			ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true, ProtectedNames: []string{".git"}}, FailClosed: true}
		opts.Policy = p
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	return o
}

func updatePatch(path, from, to string) string {
	return "*** Begin Patch\n*** Update File: " + path + "\n@@\n-" + from + "\n+" + to + "\n*** End Patch"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPatchApproval is SPEC §7.6 for each policy and where the files are.
func TestPatchApproval(t *testing.T) {
	tests := []struct {
		name    string
		policy  policy.ApprovalPolicy
		where   string // "inside", "outside", "link" (inside, to outside), "git" (protected)
		answers []Answer
		asked   bool
		wantErr string // "" means applied
	}{
		{"inside runs unasked", policy.OnRequest, "inside", nil, false, ""},
		{"inside under never", policy.Never, "inside", nil, false, ""},
		{"inside under untrusted asks", policy.Untrusted, "inside", []Answer{AllowOnce}, true, ""},
		{"outside asks", policy.OnRequest, "outside", []Answer{AllowOnce}, true, ""},
		{"outside denied", policy.OnFailure, "outside", []Answer{Deny}, true, "exec command rejected by user"},
		{"outside under never", policy.Never, "outside", nil, false, "patch rejected: it writes outside the workspace ("},
		{"through a link out of the workspace", policy.OnRequest, "link", []Answer{Deny}, true, "exec command rejected by user"},
		{"into a protected path", policy.OnRequest, "git", []Answer{Deny}, true, "exec command rejected by user"},
		{"protected under never", policy.Never, "git", nil, false, "patch rejected: it writes outside the workspace ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newWorkspace(t, tt.policy)
			outside := t.TempDir()
			name, file := "f.txt", filepath.Join(o.Cwd(), "f.txt")
			switch tt.where {
			case "outside":
				name, file = filepath.Join(outside, "f.txt"), filepath.Join(outside, "f.txt")
			case "link":
				file = filepath.Join(outside, "f.txt")
				if err := os.Symlink(outside, filepath.Join(o.Cwd(), "out")); err != nil {
					t.Fatal(err)
				}
				name = "out/f.txt"
			case "git":
				name, file = ".git/config", filepath.Join(o.Cwd(), ".git", "config")
			}
			writeFile(t, file, "old\n")
			ask := &scripted{answers: tt.answers}
			res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch(name, "old", "new"), Approver: ask})
			if qs := ask.questions(); (len(qs) > 0) != tt.asked {
				t.Fatalf("asked %d questions, want asked=%v", len(qs), tt.asked)
			} else if tt.asked && (len(qs[0].Files) != 1 || qs[0].Files[0] != file) {
				t.Errorf("the question names %v, want the real path %s", qs[0].Files, file)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got := content(t, file); got != "old\n" {
					t.Errorf("a refused patch changed the file: %q", got)
				}
				return
			}
			if err != nil || res.Err != nil {
				t.Fatalf("ApplyPatch: %v, %+v", err, res)
			}
			if got := content(t, file); got != "new\n" {
				t.Errorf("file = %q", got)
			}
		})
	}
}

func TestPatchAllowSessionCoversTheSameFiles(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	outside := filepath.Join(t.TempDir(), "f.txt")
	writeFile(t, outside, "a\n")
	ask := &scripted{answers: []Answer{AllowSession}}
	for _, step := range []struct{ from, to string }{{"a", "b"}, {"b", "c"}} {
		res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch(outside, step.from, step.to), Approver: ask})
		if err != nil || res.Err != nil {
			t.Fatalf("ApplyPatch: %v %+v", err, res)
		}
	}
	if n := len(ask.questions()); n != 1 {
		t.Errorf("asked %d times, want once", n)
	}
	other := filepath.Join(filepath.Dir(outside), "g.txt")
	writeFile(t, other, "a\n")
	if _, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch(other, "a", "b"), Approver: ask}); err == nil {
		t.Error("allow_session for one file covered another")
	}
}

func TestPatchFullAccessWritesAnywhere(t *testing.T) {
	o := newTest(t, func(opts *Options) { opts.Policy = policy.Untrusted })
	outside := filepath.Join(t.TempDir(), "f.txt")
	writeFile(t, outside, "a\n")
	ask := &scripted{answers: []Answer{AllowOnce}}
	res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch(outside, "a", "b"), Approver: ask})
	if err != nil || res.Err != nil || len(ask.questions()) != 1 {
		t.Fatalf("untrusted asks even without a sandbox: %v %+v, %d questions", err, res, len(ask.questions()))
	}
	o = newTest(t, func(opts *Options) { opts.Policy = policy.Never })
	res, err = o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch(outside, "b", "c"), Approver: ask})
	if err != nil || res.Err != nil || content(t, outside) != "c\n" {
		t.Fatalf("danger-full-access: %v %+v", err, res)
	}
}

// swapper answers yes after pointing a symlink elsewhere, as a command
// racing the question could.
type swapper struct {
	link, to string
}

func (s swapper) Approve(context.Context, Question) (Answer, error) {
	if err := os.Remove(s.link); err != nil {
		return Deny, err
	}
	return AllowOnce, os.Symlink(s.to, s.link)
}

func TestPatchTargetsMovedWhileAsking(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(a, "f.txt"), "x\n")
	writeFile(t, filepath.Join(b, "f.txt"), "x\n")
	link := filepath.Join(o.Cwd(), "out")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: updatePatch("out/f.txt", "x", "y"), Approver: swapper{link, b}})
	if err != nil || !errors.Is(res.Err, errPatchMoved) {
		t.Fatalf("ApplyPatch: %v, %+v", err, res)
	}
	if content(t, filepath.Join(a, "f.txt")) != "x\n" || content(t, filepath.Join(b, "f.txt")) != "x\n" {
		t.Error("a patch approved for one file wrote another")
	}
}

func TestPatchFailuresAreResults(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	var applied []bool
	for _, text := range []string{"garbage", updatePatch("missing.txt", "a", "b")} {
		res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: text, OnApplied: func(ok bool) { applied = append(applied, ok) }})
		if err != nil || res.Err == nil {
			t.Fatalf("ApplyPatch(%q) = %+v, %v; want a failed result", text, res, err)
		}
		var pe *patch.ParseError
		var ae *patch.Error
		if !errors.As(res.Err, &pe) && !errors.As(res.Err, &ae) {
			t.Errorf("Err %T is not a patch error", res.Err)
		}
	}
	if len(applied) != 0 {
		t.Errorf("OnApplied called for patches that were never applied: %v", applied)
	}
	if _, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: "x", Workdir: "nope"}); err == nil {
		t.Error("a missing workdir is not an error")
	}
}

// TestConcurrentPatchesLoseNothing: patches of one file at the same time
// each see the others' changes.
func TestConcurrentPatchesLoseNothing(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	file := filepath.Join(o.Cwd(), "log.txt")
	writeFile(t, file, "")
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := fmt.Sprintf("*** Begin Patch\n*** Update File: log.txt\n@@\n+entry %d\n*** End Patch", i)
			if res, err := o.ApplyPatch(t.Context(), PatchRequest{Patch: p}); err != nil || res.Err != nil {
				t.Errorf("patch %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	if got := strings.Count(content(t, file), "entry "); got != n {
		t.Errorf("%d of %d entries kept:\n%s", got, n, content(t, file))
	}
}

// TestPatchCannotUnpinProtectedLinks: the symlinks passed on the way to
// a protected repository are as protected as the sandbox keeps them
// (pinned, SPEC §8.2): deleting one would let a later patch point .git
// anywhere.
func TestPatchCannotUnpinProtectedLinks(t *testing.T) {
	o := newWorkspace(t, policy.Never)
	ws := o.Cwd()
	for _, dir := range []string{"realgit", "store/gd"} {
		if err := os.MkdirAll(filepath.Join(ws, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"gl": "realgit", ".git": "gl", "lnk": "store"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../lnk/gd\n")
	o2 := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{filepath.Join(ws, "sub")},
			ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true, ProtectedNames: []string{".git"}}, FailClosed: true}
		opts.Support = &sandbox.Support{}
		opts.Policy = policy.Never
		opts.Cwd = ws
	})
	for _, tt := range []struct {
		o    *Orchestrator
		link string
	}{{o, "gl"}, {o2, "lnk"}} {
		_, err := tt.o.ApplyPatch(t.Context(), PatchRequest{Patch: "*** Begin Patch\n*** Delete File: " + tt.link + "\n*** End Patch"})
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("Delete File: %s: %v", tt.link, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, tt.link)); err != nil {
			t.Errorf("%s is gone", tt.link)
		}
	}
}

// A patch whose call is cancelled while the applier writes it is all
// there or not at all: the applier rolls back what it wrote when told
// to stop (SPEC §6.3), and is gone when ApplyPatch returns.
func TestPatchCancelledInTheSandbox(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	var text strings.Builder
	text.WriteString("*** Begin Patch\n")
	const n = 300
	for i := range n {
		fmt.Fprintf(&text, "*** Add File: d%d/f.txt\n+x\n", i)
	}
	text.WriteString("*** End Patch")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, err := o.ApplyPatch(ctx, PatchRequest{Patch: text.String(), OnApply: func(*patch.Patch) { cancel() }})
	entries, _ := os.ReadDir(o.Cwd())
	switch {
	case err == nil && res.Err == nil:
		if len(entries) != n {
			t.Errorf("applied, but %d of %d files are there", len(entries), n)
		}
	case len(entries) != 0:
		t.Errorf("stopped (%v, %+v), but %d of %d files are there", err, res, len(entries), n)
	}
}

// A path that leads elsewhere for the applier than for execd
// (/proc/self/cwd is each one's own directory) does not let execd write,
// unasked and with its own rights, what the applier found outside the
// roots: once the sandbox says a patch needs asking, execd asks for
// every file.
func TestPatchLeadsElsewhereForExecd(t *testing.T) {
	o := newWorkspace(t, policy.OnRequest)
	t.Chdir(o.Cwd()) // execd's own directory: the workspace
	ask := &scripted{answers: []Answer{Deny}}
	_, err := o.ApplyPatch(t.Context(), PatchRequest{Workdir: "/", Approver: ask,
		Patch: "*** Begin Patch\n*** Add File: /proc/self/cwd/g\n+x\n*** End Patch"})
	if err == nil || len(ask.asked) != 1 {
		t.Errorf("a patch of /proc/self/cwd/g from /: %v, %d questions; want it asked and declined", err, len(ask.asked))
	}
	if _, err := os.Lstat(filepath.Join(o.Cwd(), "g")); err == nil {
		t.Error("execd wrote the file the sandbox found outside the roots")
	}
}

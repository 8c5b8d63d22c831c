package orchestrator

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/execd/execd/internal/sandbox"
)

func TestShellStartup(t *testing.T) {
	tests := []struct {
		argv []string
		want shellStart
	}{
		{[]string{"/bin/bash", "-lc", "x"}, shellStart{name: "bash", login: true}},
		{[]string{"bash", "-c", "x"}, shellStart{name: "bash"}},
		{[]string{"bash", "-O", "globstar", "-lc", "x"}, shellStart{name: "bash", login: true}},
		{[]string{"bash", "-o", "pipefail", "-c", "x"}, shellStart{name: "bash"}},
		{[]string{"bash", "--login", "-c", "x"}, shellStart{name: "bash", login: true}},
		{[]string{"-bash"}, shellStart{name: "bash", login: true}},
		{[]string{"zsh", "-c", "x"}, shellStart{name: "zsh"}},
		{[]string{"zsh", "-ic", "x"}, shellStart{name: "zsh", interactive: true}},
		{[]string{"bash", "--rcfile", "./rc", "-ic", "x"}, shellStart{name: "bash", interactive: true, rcfile: "./rc"}},
		{[]string{"dash", "-l"}, shellStart{name: "sh", login: true}},
		{[]string{"bash", "script.sh", "-l"}, shellStart{name: "bash"}},
		{[]string{"python3", "-l"}, shellStart{}},
		{[]string{"zsh", "-o", "login", "-c", "x"}, shellStart{name: "zsh", login: true}},
		{[]string{"zsh", "-io", "Log_In", "-c", "x"}, shellStart{name: "zsh", login: true, interactive: true}},
		{[]string{"zsh", "+o", "login", "-c", "x"}, shellStart{name: "zsh"}},
		{[]string{"zsh", "--INTERACTIVE", "-c", "x"}, shellStart{name: "zsh", interactive: true}},
	}
	for _, tt := range tests {
		if got := shellStartup(tt.argv); got != tt.want {
			t.Errorf("shellStartup(%q) = %+v; want %+v", tt.argv, got, tt.want)
		}
	}
}

func TestStartupRefs(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "PATH": "/w/bin:/usr/bin"}
	getenv := func(k string) string { return env[k] }
	text := `# ~/.profile
. "$HOME/.cargo/env"
export PATH="$HOME/.cargo/bin:$PATH"
NVM_DIR="$HOME/.nvm"
[ -s "$NVM_DIR/nvm.sh" ] && \. "$NVM_DIR/nvm.sh"
for i in /etc/profile.d/*.sh; do . $i; done
source .env.local
alias p='cd ~/proj/$X'
echo https://example.com ${HOME:-/x}/y
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export PATH="./node_modules/.bin:$PATH:"
. "$SDK/init.sh"
`
	type ref struct {
		path, dir      string
		source, follow bool
		pathEntry      string
	}
	var got []ref
	refs, vars := startupRefs(text, startupVars{"SDK": {"/opt/sdk"}}, getenv)
	for _, r := range refs {
		got = append(got, ref{r.path, r.dir, r.source, r.follow, r.pathEntry})
	}
	want := []ref{
		{"/home/u/.profile", "/home/u/.profile", false, false, ""}, // comments count
		{"/home/u/.cargo/env", "/home/u/.cargo/env", true, true, ""},
		{"/home/u/.cargo/bin", "/home/u/.cargo/bin", false, false, ""},
		{"/home/u/.nvm", "/home/u/.nvm", false, false, ""},
		{"/home/u/.nvm/nvm.sh", "/home/u/.nvm/nvm.sh", false, false, ""},
		{"/nvm.sh", "/nvm.sh", false, false, ""}, // NVM_DIR as it was before: unset
		{"/home/u/.nvm/nvm.sh", "/home/u/.nvm/nvm.sh", true, true, ""},
		{"/nvm.sh", "/nvm.sh", true, true, ""},
		{"/etc/profile.d/*.sh", "/etc/profile.d", false, true, ""},
		{"/etc/profile.d/*.sh", "/etc/profile.d", true, true, ""}, // . $i, i from the for loop
		{".env.local", "", true, true, ""},
		{"/home/u/proj/", "/home/u/proj", false, false, ""}, // X unset
		{"//example.com", "/example.com", false, false, ""},
		{"/home/u/y", "/home/u/y", false, false, ""},
		{"/home/u/.cargo/bin", "/home/u/.cargo/bin", false, false, ""}, // ${CARGO_HOME:-$HOME/.cargo}
		{"", "", false, false, "PATH"},                                 // ./node_modules/.bin
		{"", "", false, false, "PATH"},                                 // the empty entry after $PATH
		{"/opt/sdk/init.sh", "/opt/sdk/init.sh", true, true, ""},       // SDK from the file before
	}
	if !slices.Equal(got, want) {
		t.Errorf("startupRefs:\n got %v\nwant %v", got, want)
	}
	if !vars.equal(startupVars{"NVM_DIR": {unsetValue, "/home/u/.nvm"}, "PATH": {unknownValue, widenedValue}, "SDK": {"/opt/sdk"},
		"i": {unsetValue, "/etc/profile.d/*.sh"}, "p": {unsetValue, "cd", "cd ~/proj/"}}) {
		t.Errorf("variables left: %q", vars)
	}
}

func FuzzStartupRefs(f *testing.F) {
	f.Add(". \"$HOME/.cargo/env\"\nexport PATH=\"${HOME}/bin:$PATH\"\nX=~/a; . $X/b\n")
	f.Fuzz(func(t *testing.T, text string) {
		refs, _ := startupRefs(text, nil, func(k string) string { return "/home/" + k })
		for _, r := range refs {
			if r.dir != "" && (!filepath.IsAbs(r.dir) || filepath.Clean(r.dir) != r.dir) {
				t.Fatalf("%q: dir %q is not a clean absolute path", text, r.dir)
			}
			if r.follow && r.path == "" {
				t.Fatalf("%q: follows an unknown path", text)
			}
		}
	})
}

// What a login shell's profiles name counts like the profiles: a file
// they source, a PATH entry they add, a directory of scripts a loop
// sources, in reach of sandboxed commands, keeps the shell in the
// sandbox (SPEC §7.2).
func TestStartupNames(t *testing.T) {
	o, home, work := startupTestOrchestrator(t)
	profile := filepath.Join(home, ".profile")
	login := call{argv: []string{"/bin/bash", "-lc", "ls"}, cwd: work}
	for text, want := range map[string]string{
		"":                                  "",
		"export PATH=\"$HOME/bin:$PATH\"\n": "",
		". \"$HOME/.cargo/env\"\n":          "names $HOME/.cargo/env",
		"export PATH=\"$HOME/.cargo/bin:$PATH\"\n":                "names $HOME/.cargo/bin",
		"for f in ~/rc.d/*; do . \"$f\"; done\n":                  "",
		". ./.env\n":                                              "sources ./.env",
		"W=" + work + "\n. \"$W/x\"\n":                            "names " + work,
		". " + filepath.Join(home, "more") + "\n":                 "names " + filepath.Join(work, "tools"),
		"export PATH=\"./node_modules/.bin:$PATH\"\n":             "adds the PATH entry \"./node_modules/.bin\"",
		"PATH=$PATH:\n":                                           "adds the PATH entry \"\"",
		"export PATH=\"${CARGO_HOME:-$HOME/.cargo}/bin:$PATH\"\n": "names ${CARGO_HOME:-$HOME/.cargo}/bin",
		"cd " + filepath.Join(work, "$PROJECT") + "\n":            "names " + filepath.Join(work, "$PROJECT"),
	} {
		if err := os.WriteFile(profile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "more"), []byte("PATH="+filepath.Join(work, "tools")+":$PATH\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		why := o.startupWhy(login)
		if (want == "") != (why == "") || !strings.Contains(why, want) {
			t.Errorf("a .profile of %q: %q; want %q", text, why, want)
		}
	}
	// A script in a directory a loop sources, itself naming a root.
	if err := os.WriteFile(profile, []byte("for f in ~/rc.d/*; do . \"$f\"; done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "rc.d", "x.sh"), []byte(". ~/.cargo/env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := o.startupWhy(login); !strings.Contains(why, "names ~/.cargo/env") {
		t.Errorf("a script the profile's loop sources names a root: %q; want the shell kept in the sandbox", why)
	}
	if why := o.startupWhy(call{argv: []string{"/bin/bash", "-c", "ls"}, cwd: work}); why != "" {
		t.Errorf("not a login shell: %q", why)
	}
	if err := os.Remove(profile); err != nil {
		t.Fatal(err)
	}
	// zsh reads its login files from the ZDOTDIR its .zshenv sets.
	zd := filepath.Join(home, "zd")
	if err := os.MkdirAll(zd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".zshenv"), []byte("export ZDOTDIR=\"$HOME/zd\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(zd, ".zprofile"), []byte(". ~/.cargo/env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := o.startupWhy(call{argv: []string{"zsh", "-lc", "ls"}, cwd: work}); !strings.Contains(why, "zd/.zprofile, which names ~/.cargo/env") {
		t.Errorf("zsh with ZDOTDIR set in .zshenv: %q; want its .zprofile read", why)
	}
	// An interactive shell reads its rc file.
	if why := o.startupWhy(call{argv: []string{"bash", "--rcfile", "./rc", "-ic", "ls"}, cwd: work}); !strings.Contains(why, filepath.Join(work, "rc")) {
		t.Errorf("bash --rcfile ./rc -i in the workspace: %q; want the shell kept in the sandbox", why)
	}
	// Without HOME, the shell's home is the user's.
	o.env = []string{"PATH=/usr/bin:/bin"}
	if u, err := user.Current(); err == nil && o.shellHome() != u.HomeDir {
		t.Errorf("shellHome without HOME = %q; want the user's, %q", o.shellHome(), u.HomeDir)
	}
}

// startupTestOrchestrator returns an orchestrator whose commands' HOME
// is home, with two writable roots: work, its workspace, and
// home/.cargo; home/rc.d exists too.
func startupTestOrchestrator(t *testing.T) (o *Orchestrator, home, work string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work = filepath.Join(base, "home"), filepath.Join(base, "work")
	cargo := filepath.Join(home, ".cargo")
	for _, d := range []string{work, cargo, filepath.Join(home, "rc.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o = gitTestOrchestrator(t, work, "/usr/bin:/bin")
	o.env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	fi, err := os.Stat(cargo)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := sandbox.FileID(fi)
	o.roots = append(o.roots, sandbox.Root{Path: cargo, Dev: dev, Ino: ino})
	return o, home, work
}

// A value a startup file assigns is one a variable may have, not the one
// it has: the assignment may be conditional, commented out, in a file
// the shell skips, or undone (SPEC §7.2). Each case here lifted a login
// shell whose startup files source a file a sandboxed command wrote.
func TestStartupValues(t *testing.T) {
	type file struct{ name, text string } // name relative to home
	login := []string{"/bin/bash", "-lc", "ls"}
	for _, tt := range []struct {
		name  string
		files []file
		env   []string
		argv  []string
		want  string
	}{
		{"a default after a file bash skips", []file{{".profile", "ENVDIR=/opt/safe\n"},
			{".bash_profile", ". \"${ENVDIR:-$HOME/.cargo}/env\"\n"}}, nil, login, ".cargo}/env"},
		{"a default after a comment", []file{{".profile", "# ENVDIR=/opt/safe\n. \"${ENVDIR:-$HOME/.cargo}/env\"\n"}},
			nil, login, ".cargo}/env"},
		{"a default after a condition", []file{{".profile", "[ -d /nonexistent ] && ENVDIR=/opt/safe\n. \"${ENVDIR:-$HOME/.cargo}/env\"\n"}},
			nil, login, ".cargo}/env"},
		{"unset", []file{{".profile", "unset CARGO_HOME\n. \"${CARGO_HOME:-$HOME/.cargo}/env\"\n"}},
			[]string{"CARGO_HOME=/opt/cargo"}, login, ".cargo}/env"},
		{"a value set in a file read later", []file{{".bash_profile", ". ~/shared\n"}, {"shared", ". \"${ENVDIR:-$HOME/.cargo}/env\"\n"},
			{".bashrc", "ENVDIR=/opt/safe\n"}}, nil, login, ".cargo}/env"},
		{"PWD is where the shell starts", []file{{".profile", ". \"$PWD/.envrc\"\n"}}, []string{"PWD=/opt"}, login, "$PWD/.envrc"},
		{"a quoted space", []file{{".profile", ". \"$HOME/My Projects/env.sh\"\n"}}, nil, login, "My Projects/env.sh"},
		{"an escaped space", []file{{".profile", ". ~/My\\ Projects/env.sh\n"}}, nil, login, "Projects/env.sh"},
		{"zsh -o login", []file{{".zprofile", ". ~/.cargo/env\n"}}, nil, []string{"zsh", "-o", "login", "-c", "ls"}, "~/.cargo/env"},
		{"zsh --LOG_IN", []file{{".zprofile", ". ~/.cargo/env\n"}}, nil, []string{"zsh", "--LOG_IN", "-c", "ls"}, "~/.cargo/env"},
		{"exec -l zsh", nil, nil, []string{"bash", "-c", "exec -l zsh -c ls"}, "environment of its own making"},
		{"ZDOTDIR set in .zprofile", []file{{".zprofile", "ZDOTDIR=$PWD\n"}}, nil, []string{"zsh", "-lc", "ls"}, "/work/.zshenv, which a sandboxed"},
		{"an unset variable in PATH", []file{{".profile", "export PATH=\"$GOBIN:$PATH\"\n"}}, nil, login, "adds the PATH entry \"$GOBIN\""},
		{"zsh's path array", []file{{".zprofile", "path=(./node_modules/.bin $path)\n"}}, nil, []string{"zsh", "-lc", "ls"}, "adds the PATH entry"},
		{"zsh's path array over lines", []file{{".zprofile", "path=(\n  ~/bin\n  bin\n  $path\n)\n"}}, nil, []string{"zsh", "-lc", "ls"},
			"adds the PATH entry \"bin\""},
		{"zsh's path array and a command after it", []file{{".zprofile", "path=(~/bin $path); export PATH\n"}}, nil,
			[]string{"zsh", "-lc", "ls"}, ""},
		{"an unset LD_LIBRARY_PATH", []file{{".profile", "export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH\n"}}, nil, login,
			"adds the LD_LIBRARY_PATH entry"},
		{"braces", []file{{".profile", "for f in ~/.{cargo/env,bash_aliases}; do [ -r \"$f\" ] && . \"$f\"; done\n"}}, nil, login, ".{cargo/env"},
		{"deeper than execd reads", []file{{".profile", ". ~/c1\n"}, {"c1", ". ~/c2\n"}, {"c2", ". ~/c3\n"}, {"c3", ". ~/c4\n"},
			{"c4", ". ~/c5\n"}, {"c5", ". ~/c6\n"}, {"c6", ". ~/c7\n"}, {"c7", ". ~/.cargo/env\n"}}, nil, login, "deep"},
		{"a value two steps back", []file{{".profile", "f() { . \"$HOME/$C/env\"; }\ng() { C=$B; }\nB=.cargo\ng\nf\n"}}, nil, login, "$HOME/$C/env"},
		{"${X:?}", []file{{".profile", ". \"${HOME:?}/.cargo/env\"\n"}}, nil, login, ".cargo/env"},
		{"${X%/}", []file{{".profile", ". \"${HOME%/}/.cargo/env\"\n"}}, nil, login, ".cargo/env"},
		{"local", []file{{".profile", "f(){ local CARGO_HOME; . \"${CARGO_HOME:-$HOME/.cargo}/env\"; }; f\n"}},
			[]string{"CARGO_HOME=/opt/cargo"}, login, ".cargo}/env"},
		{"a negated glob", []file{{".profile", "for f in ~/rc.d/[!_]*; do . \"$f\"; done\n"}, {"rc.d/x.sh", ". ~/.cargo/env\n"}}, nil, login,
			"~/.cargo/env"},
		{"a NUL byte", []file{{".profile", ". ~/safe\n"}, {"safe", ". ~/.cargo/env\n\x00\n"}}, nil, login, "~/.cargo/env"},
		{"fish", nil, nil, []string{"fish", "-c", "ls"}, "fish's startup files"},
		{"ZDOTDIR unset", []file{{".zshenv", "unset ZDOTDIR\n"}}, nil, []string{"zsh", "-lc", "ls"}, ""},
		{"a ZDOTDIR bash does not take", []file{{".profile", "export ZDOTDIR=\"$(zdot)\"\n"}}, nil, login, ""},
		{"a ZDOTDIR zsh takes", []file{{".zshenv", "export ZDOTDIR=\"$(zdot)\"\n"}}, nil, []string{"zsh", "-lc", "ls"}, "ZDOTDIR"},
		{"GOBIN set before it goes into PATH", []file{{".profile", "export GOBIN=$HOME/go/bin\nexport PATH=$PATH:$GOBIN\n"}}, nil, login, ""},
		{"a for loop adding to PATH", []file{{".profile", "for d in ~/bin ~/.local/bin; do PATH=\"$d:$PATH\"; done\n"}}, nil, login, ""},
		{"many scripts in a directory the profile sources", []file{{".profile", "for f in ~/rc.d/*; do . \"$f\"; done\n"}},
			nil, login, ""},
		{"an assignment that never reaches a root", []file{{".profile", "X=/opt/a\nX=\"$X:/opt/b\"\nexport PATH=\"$X:$PATH\"\n. \"$X/env\"\n"}},
			nil, login, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, home, work := startupTestOrchestrator(t)
			o.env = append(o.env, tt.env...)
			spaced := filepath.Join(home, "My Projects") // a root with a space
			if err := os.Mkdir(spaced, 0o755); err != nil {
				t.Fatal(err)
			}
			o.roots = append(o.roots, sandbox.Root{Path: spaced})
			for i := range 25 { // more than the files a call may read, with the ones it lists
				if err := os.WriteFile(filepath.Join(home, "rc.d", fmt.Sprint(i)), []byte("true\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(home, f.name), []byte(f.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			why := o.startupWhy(call{argv: tt.argv, cwd: work})
			if (tt.want == "") != (why == "") || !strings.Contains(why, tt.want) {
				t.Errorf("%q: %q; want %q", tt.argv, why, tt.want)
			}
		})
	}
}

func TestBraces(t *testing.T) {
	for w, want := range map[string][]string{
		"~/.{cargo/env,bash_aliases}": {"~/.cargo/env", "~/.bash_aliases"},
		"a{b,c{d,e}}f":                {"abf", "acdf", "acef"},
		"${HOME}/{x}/{y,z}":           {"${HOME}/{x}/y", "${HOME}/{x}/z"},
		"a{b,c":                       {"a{b,c"},
		"plain":                       {"plain"},
	} {
		if got, ok := braces(w); !ok || !slices.Equal(got, want) {
			t.Errorf("braces(%q) = %q, %v; want %q", w, got, ok, want)
		}
	}
	if _, ok := braces(strings.Repeat("{a,b}", 7)); ok {
		t.Error("128 words from one: want too many")
	}
}

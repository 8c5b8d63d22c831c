package policy

import (
	"slices"
	"testing"
)

func bashLc(script string) []string { return []string{"bash", "-lc", script} }

// COMPAT §17.6.
func TestPlainCommands(t *testing.T) {
	tests := []struct {
		script string
		want   [][]string // nil: not plain
	}{
		{"ls && pwd; echo 'hi there' | wc -l", [][]string{{"ls"}, {"pwd"}, {"echo", "hi there"}, {"wc", "-l"}}},
		{"git commit -m \"line1\nline2\"", [][]string{{"git", "commit", "-m", "line1\nline2"}}},
		{`echo "/usr"'/'"local"/bin`, [][]string{{"echo", "/usr/local/bin"}}},
		{`rg -n "foo" -g"*.py"`, [][]string{{"rg", "-n", "foo", "-g*.py"}}},
		{"echo 123 456", [][]string{{"echo", "123", "456"}}},
		{`grep -R "Cargo.toml" -n || true`, [][]string{{"grep", "-R", "Cargo.toml", "-n"}, {"true"}}},
		{`echo a\ b "x\"y\\z\q" --format=%H`, [][]string{{"echo", "a b", `x"y\z\q`, "--format=%H"}}},
		// Where mvdan and the shells part ways (a second review's findings).
		{"ls # \\\nrm -rf x", nil},                 // the comment ends where the joined line does
		{"ls \r# ; rm -rf x", nil},                 // a carriage return is part of a word to the shells
		{"cat \"$\\\n(rm -rf x)\"", nil},           // $ then a line continuation is an expansion
		{"find v -maxdepth 0 $\\\n'-delete'", nil}, // the same, unquoted
		{`echo "a$"`, nil},
		{`echo "a\$b" c\$d`, [][]string{{"echo", "a$b", "c$d"}}}, // escaped: literal
		{"ls =cat", nil},                                         // zsh: the path of cat
		{"ls # a comment", [][]string{{"ls"}}},
		{"ls\npwd", [][]string{{"ls"}, {"pwd"}}},
		// Rejected.
		{`echo "hi ${USER}"`, nil},
		{`echo "$HOME"`, nil},
		{`echo $(pwd)`, nil},
		{"echo `pwd`", nil},
		{"FOO=bar ls", nil},
		{"ls &&", nil},
		{"&& ls", nil},
		{"ls ;; pwd", nil},
		{"ls | | wc", nil},
		{"echo hi & echo bye", nil},
		{`rg -g"$VAR" x`, nil},
		{`rg -g"$(pwd)" x`, nil},
		{"(ls)", nil},
		{"{ ls; }", nil},
		{"ls > out.txt", nil},
		{"ls |& wc", nil},
		{"! ls", nil},
		{"ls *.py", nil},
		{"cat ~/x", nil},
		{"echo a{b,c}", nil},
		{"echo $'x'", nil},
		{"cat <(ls)", nil},
		{"if true; then ls; fi", nil},
		{"", nil},
		{"  \n\t  ", nil},
	}
	for _, tt := range tests {
		got, ok := PlainCommands(bashLc(tt.script))
		if ok != (tt.want != nil) || !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("PlainCommands(%q) = %q, %v; want %q", tt.script, got, ok, tt.want)
		}
	}
}

func TestPlainCommandsShells(t *testing.T) {
	for _, argv := range [][]string{{"zsh", "-lc", "ls"}, {"/bin/sh", "-c", "ls"}, {"/usr/bin/bash", "-lc", "ls"}} {
		if _, ok := PlainCommands(argv); !ok {
			t.Errorf("PlainCommands(%q): not plain", argv)
		}
	}
	for _, argv := range [][]string{{"bash", "-lc", "git", "status"}, {"bash", "-x", "ls"}, {"python3", "-c", "ls"}, {"bash", "-lc"}} {
		if got, ok := PlainCommands(argv); ok {
			t.Errorf("PlainCommands(%q) = %q; want not plain", argv, got)
		}
	}
}

// COMPAT §17.6 case 33.
func TestHeredocCommand(t *testing.T) {
	tests := []struct {
		script string
		want   []string // nil: not the heredoc form
	}{
		{"python3 <<'PY'\nprint('hello')\nPY", []string{"python3"}},
		{"python3 << PY\nprint('hello')\nPY", []string{"python3"}},
		{"python3 <<'PY' > out.txt\nprint('hello')\nPY", []string{"python3"}},
		{"cat <<-EOF >> log\n\thello\n\tEOF", []string{"cat"}},
		{"python3 -u script.py <<'PY'\n$(rm -rf /)\nPY", []string{"python3", "-u", "script.py"}},
		// Rejected.
		{"python3 <<'PY'\nprint('hello')\nPY\nls", nil},
		{"python3 <<'PY' && ls\nprint('hello')\nPY", nil},
		{"echo hello > out.txt", nil},
		{`python3 <<< "$(rm -rf /)"`, nil},
		{"python3 $((1<<2)) <<'PY'\nprint('hello')\nPY", nil},
		{"python3 <<PY\n$(rm -rf /)\nPY", nil}, // an unquoted delimiter expands the body
		{"python3 <<PY\n$HOME\nPY", nil},
		{"python3 <<'PY' > $OUT\nx\nPY", nil},
		{"python3 <<'PY' < in\nx\nPY", nil},
		{"cat <<EOF\nhi\n\\\nEOF\nrm -rf z\nEOF", nil},        // \-newline ends the body early in the shells
		{"cat <<'E'OF\nhi\nEOF\nrm -rf z\nEOF", nil},          // partly quoted delimiter
		{"cat <<\"E\\\\F\"\nhi\nE\\F\nrm -rf z\nE\\\\F", nil}, // escaped delimiter
		{"cat <<EOF\n$\\\n(rm -rf x)\nEOF", nil},
		{"cat <<EOF\na \\$HOME\nEOF", nil},
		{"cat <<EOF\nplain text\nEOF", []string{"cat"}},
		{"FOO=1 python3 <<'PY'\nx\nPY", nil},
	}
	for _, tt := range tests {
		got, ok := HeredocCommand(bashLc(tt.script))
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("HeredocCommand(%q) = %q, %v; want %q", tt.script, got, ok, tt.want)
		}
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		argv []string
		want [][]string
	}{
		{bashLc("ls && pwd"), [][]string{{"ls"}, {"pwd"}}},
		{bashLc("python3 <<'PY'\nx\nPY"), [][]string{{"python3"}}},
		{bashLc("ls > out"), [][]string{bashLc("ls > out")}},
		{[]string{"rm", "-rf", "x"}, [][]string{{"rm", "-rf", "x"}}},
	}
	for _, tt := range tests {
		if got := Commands(tt.argv); !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("Commands(%q) = %q; want %q", tt.argv, got, tt.want)
		}
	}
}

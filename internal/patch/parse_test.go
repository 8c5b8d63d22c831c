package patch

import (
	"errors"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Hunk
	}{
		{"all three", "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n" +
			"*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n*** End Patch",
			[]Hunk{
				{Op: Add, Path: "path/add.py", Contents: "abc\ndef\n"},
				{Op: Delete, Path: "path/delete.py"},
				{Op: Update, Path: "path/update.py", MoveTo: "path/update2.py", Chunks: []Chunk{
					{Context: "def f():", HasContext: true, Old: []string{"    pass"}, New: []string{"    return 123"}}}},
			}},
		{"update then add", "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content\n*** End Patch",
			[]Hunk{
				{Op: Update, Path: "file.py", Chunks: []Chunk{{New: []string{"line"}}}},
				{Op: Add, Path: "other.py", Contents: "content\n"},
			}},
		{"first chunk without @@", "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch",
			[]Hunk{{Op: Update, Path: "file2.py", Chunks: []Chunk{{Old: []string{"import foo"}, New: []string{"import foo", "bar"}, Kept: []Kept{{0, 0}}}}}}},
		{"end of file chunk", "*** Begin Patch\n*** Update File: f\n@@\n-last\n+new\n*** End of File\n*** End Patch",
			[]Hunk{{Op: Update, Path: "f", Chunks: []Chunk{{Old: []string{"last"}, New: []string{"new"}, EOF: true}}}}},
		{"empty add", "*** Begin Patch\n*** Add File: empty\n*** End Patch",
			[]Hunk{{Op: Add, Path: "empty"}}},
		{"blank lines between hunks and chunks", "*** Begin Patch\n\n*** Delete File: a\n\n*** Update File: b\n@@\n-x\n+y\n\n  \n@@ ctx\n-p\n*** End Patch",
			[]Hunk{{Op: Delete, Path: "a"}, {Op: Update, Path: "b", Chunks: []Chunk{
				// Within a chunk an empty line is empty context, and a
				// line of spaces is context too.
				{Old: []string{"x", "", " "}, New: []string{"y", "", " "}, Kept: []Kept{{1, 1}, {2, 2}}},
				{Context: "ctx", HasContext: true, Old: []string{"p"}},
			}}}},
		{"CRLF and padded markers", "  *** Begin Patch \r\n *** Add File: a \r\n+x\r\n*** End Patch  \r\n",
			[]Hunk{{Op: Add, Path: "a", Contents: "x\n"}}},
		{"heredoc", "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
			[]Hunk{{Op: Delete, Path: "a"}}},
		{"no hunks", "*** Begin Patch\n*** End Patch", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Hunks, tt.want) {
				t.Errorf("got  %+v\nwant %+v", p.Hunks, tt.want)
			}
		})
	}
}

// TestParseErrors pins the messages of SPEC §6.5 and that line numbers
// count the lines of the text as given.
func TestParseErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"bad", "Invalid patch: The first line of the patch must be '*** Begin Patch'"},
		{"", "Invalid patch: The first line of the patch must be '*** Begin Patch'"},
		{"*** Begin Patch\nbad", "Invalid patch: The last line of the patch must be '*** End Patch'"},
		{"*** Begin Patch", "Invalid patch: The last line of the patch must be '*** End Patch'"},
		{"*** Begin Patch\n*** Update File: test.py\n*** End Patch",
			"Invalid patch hunk on line 2: Update file hunk for path 'test.py' is empty"},
		{"\n\n*** Begin Patch\n*** Update File: test.py\n*** End Patch",
			"Invalid patch hunk on line 4: Update file hunk for path 'test.py' is empty"},
		{"*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch",
			"Invalid patch hunk on line 2: '*** Frobnicate File: foo' is not a valid hunk header. " +
				"Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"},
		{"*** Begin Patch\n*** Add File: a\n+x\nstray\n*** End Patch",
			"Invalid patch hunk on line 4: 'stray' is not a valid hunk header. " +
				"Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"},
		{"*** Begin Patch\n*** Update File: a\n-x\n+y\nnot a chunk\n*** End Patch",
			"Invalid patch hunk on line 5: Expected update hunk to start with a @@ context marker, got: 'not a chunk'"},
		{"*** Begin Patch\n*** Update File: a\nbad line\n*** End Patch",
			"Invalid patch hunk on line 3: Unexpected line found in update hunk: 'bad line'. " +
				"Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
			"Invalid patch hunk on line 4: Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
			"Invalid patch hunk on line 4: Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Update File: a\n@@ x\n-y\n@@\n*** Delete File: b\n*** End Patch",
			"Invalid patch hunk on line 6: Update hunk does not contain any lines"},
		{"<<'EOF'\n*** Begin Patch\n*** Update File: a\n*** End Patch\nEOF",
			"Invalid patch hunk on line 3: Update file hunk for path 'a' is empty"},
		{"<<'EOF'\n*** Begin Patch\n*** End Patch\nOTHER", "Invalid patch: The first line of the patch must be '*** Begin Patch'"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.text)
		var pe *ParseError
		if !errors.As(err, &pe) || err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tt.text, err, tt.want)
		}
	}
}

// TestRecognize is COMPAT §17.11 case 74 and SPEC §6.4.
func TestRecognize(t *testing.T) {
	const body = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"
	heredoc := func(prefix string) []string {
		return []string{"bash", "-lc", prefix + "apply_patch <<'PATCH'\n" + body + "\nPATCH\n"}
	}
	tests := []struct {
		name    string
		argv    []string
		ok      bool
		dir     string
		implied bool // ErrImplicit
	}{
		{"argv", []string{"apply_patch", body}, true, "", false},
		{"applypatch argv", []string{"applypatch", body}, true, "", false},
		{"argv with a bad patch is still a patch", []string{"apply_patch", "garbage"}, true, "", false},
		{"heredoc", heredoc(""), true, "", false},
		{"heredoc under zsh -c", []string{"/bin/zsh", "-c", "applypatch <<EOF\n" + body + "\nEOF"}, true, "", false},
		{"cd &&", heredoc("cd foo && "), true, "foo", false},
		{"cd quoted", heredoc("cd 'a b' && "), true, "a b", false},
		{"cd double-quoted", heredoc(`cd "a b" && `), true, "a b", false},
		{"cd ;", heredoc("cd foo; "), false, "", false},
		{"cd ||", heredoc("cd foo || "), false, "", false},
		{"cd |", heredoc("cd foo | "), false, "", false},
		{"echo &&", heredoc("echo x && "), false, "", false},
		{"argument", []string{"bash", "-lc", "apply_patch foo <<'EOF'\n" + body + "\nEOF\n"}, false, "", false},
		{"two cds", heredoc("cd a && cd b && "), false, "", false},
		{"cd two args", heredoc("cd a b && "), false, "", false},
		{"cd option", heredoc("cd -P && "), false, "", false},
		{"cd expansion", heredoc("cd $HOME && "), false, "", false},
		{"trailing command", []string{"bash", "-lc", "apply_patch <<'EOF'\n" + body + "\nEOF\necho done\n"}, false, "", false},
		{"&& echo done", []string{"bash", "-lc", "apply_patch <<'EOF' && echo done\n" + body + "\nEOF\n"}, false, "", false},
		{"not a shell", []string{"python3", "-c", "apply_patch <<'EOF'\n" + body + "\nEOF\n"}, false, "", false},
		{"ordinary script", []string{"bash", "-lc", "cat <<'EOF'\nx\nEOF"}, false, "", false},
		{"ordinary argv", []string{"ls", "-l"}, false, "", false},
		{"bare patch argv", []string{body}, false, "", true},
		{"bare patch script", []string{"bash", "-lc", body}, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, ok, err := Recognize(tt.argv)
			if tt.implied != errors.Is(err, ErrImplicit) || (!tt.implied && err != nil) {
				t.Fatalf("err = %v, want ErrImplicit %v", err, tt.implied)
			}
			if ok != tt.ok || inv.Dir != tt.dir {
				t.Fatalf("got %+v %v, want ok %v dir %q", inv, ok, tt.ok, tt.dir)
			}
			if ok && tt.argv[0] != "apply_patch" && tt.argv[0] != "applypatch" {
				if _, err := Parse(inv.Patch); err != nil {
					t.Errorf("the heredoc body %q does not parse: %v", inv.Patch, err)
				}
			}
		})
	}
}

func TestRecognizeDashHeredocStripsTabs(t *testing.T) {
	inv, ok, err := RecognizeScript("apply_patch <<-EOF\n\t*** Begin Patch\n\t*** Add File: a\n\t+x\n\t*** End Patch\n\tEOF\n")
	if err != nil || !ok {
		t.Fatalf("not recognised: %v", err)
	}
	p, err := Parse(inv.Patch)
	if err != nil || p.Hunks[0].Contents != "x\n" {
		t.Fatalf("Parse(%q) = %+v, %v", inv.Patch, p, err)
	}
}

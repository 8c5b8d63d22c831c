package policy

import (
	"strings"
	"testing"
)

func words(s string) []string { return strings.Fields(s) }

// COMPAT §17.5 cases 26-28.
func TestKnownSafe(t *testing.T) {
	safe := [][]string{
		words("ls"), words("git status"), words("git branch"), words("git branch --show-current"),
		words("git -C . branch --show-current"), words("base64"), words("sed -n 1,5p file.txt"), words("nl -nrz x"),
		words("find . -name file.txt"), words("rg Cargo.toml -n"), {"zsh", "-lc", "ls"}, bashLc("ls && pwd"),
		bashLc("echo 'hi' ; ls"), bashLc("ls | wc -l"), bashLc(`grep -R "Cargo.toml" -n || true`),
		bashLc("sed -n '1,5p' file.txt"), words("/bin/ls -la"), words("git --no-pager log -n 3"),
		words("sed -n 7p f"), words("git branch -a -v"), words("git branch --format=%(refname)"),
		words("uniq -c in"), words("/usr/bin/cat x"), words("rg -n x"),
	}
	unsafe := [][]string{
		words("git branch -d feature"), words("git branch new-branch"), words("git checkout status"),
		words("git log --output=x -n 1"), words("git diff --output x"), words("git -c core.pager=cat log"),
		words("git -ccore.pager=cat status"), words("git --git-dir=.evil diff"), words("git --work-tree . status"),
		words("git --exec-path=/tmp show HEAD"), words("cargo check"), words("git fetch"), words("sed -n xp file.txt"),
		words("base64 -o out"), words("base64 --output out"), words("base64 --output=out"), words("base64 -ob64.txt"),
		words("rg --search-zip x"), words("rg -z x"), words("rg --pre pwned x"), words("rg --pre=pwned x"),
		words("rg --hostname-bin=x y"), {"bash", "-lc", "git", "status"}, bashLc("'git status'"),
		bashLc("ls && rm -rf /"), bashLc("(ls)"), bashLc("ls > out.txt"), bashLc("git -C . branch -d feature"),
		words("git diff --ext-diff"), words("git log --exec=x"), words("git"), words("git -C"), words("sed -n 1p a b"),
		words("sed -i 1p f"), nil, {},
		// A second review's findings.
		words("uniq in out"), {"sed", "-n", "1p", "-e1e touch pwned"}, words("rg -nz x"), words("rg -zn x"),
		words("./cat x"), words("node_modules/.bin/ls"), words("/tmp/ls"),
	}
	for _, opt := range unsafeFindOptions {
		unsafe = append(unsafe, []string{"find", ".", opt, "rm", "{}", ";"})
	}
	for _, argv := range safe {
		if !KnownSafe(argv) {
			t.Errorf("KnownSafe(%q) = false; want true", argv)
		}
	}
	for _, argv := range unsafe {
		if KnownSafe(argv) {
			t.Errorf("KnownSafe(%q) = true; want false", argv)
		}
	}
}

func TestDangerous(t *testing.T) {
	dangerous := [][]string{words("rm -rf /"), words("rm -f /"), words("sudo rm -rf x"), bashLc("ls && rm -rf /"),
		words("/bin/rm -rf x"), words("sudo sudo rm -f x")}
	harmless := [][]string{words("rm x"), words("rm -r x"), words("ls -rf"), words("sudo ls"), bashLc("rm x"), words("sudo"), nil}
	for _, argv := range dangerous {
		if !Dangerous(argv) {
			t.Errorf("Dangerous(%q) = false; want true", argv)
		}
	}
	for _, argv := range harmless {
		if Dangerous(argv) {
			t.Errorf("Dangerous(%q) = true; want false", argv)
		}
	}
}

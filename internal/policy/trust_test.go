package policy

import (
	"strings"
	"testing"
)

// The rules lift the sandbox only for what they saw whole (SPEC §7.2):
// plain words, no redirection but /dev/null and descriptor duplications,
// no heredoc, no option that writes a file, no program a sandboxed
// command could have planted.
func TestUnsandboxedByRules(t *testing.T) {
	rules := rulesOf(t, `
prefix_rule(pattern=[["cat", "echo", "ls", "sort", "tee", "sed", "find", "dd", "uniq", "curl", "env", "printf", "awk", "gawk", "tar", "openssl", "rg", "fd", "xargs", "grep", "read", "hash", "yq", "tree", "kubectl", "sqlite3", "hg", "wc", "helm", "xmllint"]], decision="allow")
prefix_rule(pattern=["git", ["add", "diff", "status", "log", "grep", "-C", "rebase", "difftool", "bisect", "submodule", "clone", "init", "send-email"]], decision="allow")
prefix_rule(pattern=["bash", "-c"], decision="allow")
prefix_rule(pattern=["bash", "-lc"], decision="allow")
`)
	plantedCat := func(name string) bool { return name == "cat" || name == "./tool" || name == "echo" }
	tests := []struct {
		argv    []string
		planted func(string) bool
		want    bool
	}{
		{bashLc("cat README"), nil, true},
		{bashLc("cat >> /any/file <<'EOF'\nx\nEOF"), nil, false},
		{bashLc("cat <<'EOF'\nx\nEOF"), nil, false},
		{bashLc("echo x > /etc/profile"), nil, false},
		{bashLc("echo x >> ~/.bashrc"), nil, false},
		{bashLc("echo x > /dev/null"), nil, true},
		{bashLc(`echo x >> "/dev/null"`), nil, true},
		{bashLc("ls 2>&1 | cat"), nil, true},
		{bashLc("ls >&2"), nil, true},
		{bashLc("ls 2>/dev/null"), nil, true},
		{bashLc("ls &>/dev/null"), nil, true},
		{bashLc("ls < /dev/null"), nil, true},
		{bashLc("ls 3>&1 1>&2 2>&3 3>&-"), nil, true},
		{bashLc("ls >& out"), nil, false}, // bash reads >&word as &>word
		{bashLc("ls > /dev/null/../../etc/x"), nil, false},
		{bashLc("ls {fd}>/dev/null"), nil, false},
		{bashLc("cat <<< x"), nil, false},
		{bashLc("ls > $OUT"), nil, false},
		{bashLc("git add -A && git status"), nil, true},
		{bashLc("git add -A && git diff --output=/etc/x"), nil, false},
		{bashLc("git log --out=/tmp/x"), nil, false},
		{bashLc("git grep -O./p hello"), nil, false},
		{bashLc("git -C x log --ext-diff"), nil, false},
		{bashLc("sort x"), nil, true},
		{bashLc("sort -o ~/.bashrc x"), nil, false},
		{bashLc("sort -uo f x"), nil, false},
		{bashLc("sort --output=f x"), nil, false},
		{bashLc("sort --out=f x"), nil, false},
		{bashLc("sort --o f x"), nil, false},
		{bashLc("tee /etc/x"), nil, false},
		{bashLc("echo x | tee"), nil, true},
		{bashLc("sed -n 1p f"), nil, true},
		{bashLc("sed -i s/a/b/ f"), nil, false},
		{bashLc("sed 'w /etc/x' f"), nil, false},
		{bashLc("sed --in-pl s/a/b/ f"), nil, false},
		{bashLc("sed --expr='w /etc/x' f"), nil, false},
		{bashLc("sed -n -e p -ne 'w /etc/x' f"), nil, false},
		{bashLc("sed -n -E 1,2p f"), nil, true},
		{bashLc("find . -name x"), nil, true},
		{bashLc("find . -fprint /etc/x"), nil, false},
		{bashLc("dd if=a of=/etc/x"), nil, false},
		{bashLc("uniq a"), nil, true},
		{bashLc("uniq a b"), nil, false},
		{bashLc("curl -fsSL https://example.com"), nil, true},
		{bashLc("curl -fsSLo x https://example.com"), nil, false},
		{bashLc("curl --dump-h x https://example.com"), nil, false},
		{bashLc("env echo x"), nil, true},
		{bashLc("env rm x"), nil, false}, // rm is not allowed by a rule
		{bashLc("env -S 'echo x'"), nil, false},
		{[]string{"bash", "-c", "echo x > /etc/x"}, nil, false}, // a shell script seen as one argv
		{[]string{"bash", "-c", "ls"}, nil, true},               // plain: its command is allowed
		{bashLc("bash -c 'cat f > out'"), nil, false},           // a nested script that is not plain
		{bashLc("bash -c 'cat f'"), nil, true},
		{bashLc("cat x"), plantedCat, false},
		{bashLc("echo x"), plantedCat, true}, // a builtin: no file runs
		{[]string{"echo", "x"}, plantedCat, false},
		{[]string{"./tool", "x"}, plantedCat, false},
		{bashLc("ls"), func(n string) bool { return n == "bash" }, false},
		{bashLc("printf x > /dev/null"), nil, true},
		{bashLc("awk '{print $1}' f"), nil, true},
		{bashLc("awk -W interactive 'BEGIN{print 1}'"), nil, false},
		{bashLc("awk '{print > \"/etc/x\"}' f"), nil, false},
		{bashLc("tar -tf a.tar"), nil, true},
		{bashLc("tar tzvf a.tgz"), nil, true},
		{bashLc("tar -tf a.tar --checkpoint=1 --checkpoint-action=exec=id"), nil, false},
		{bashLc("tar -xf a.tar"), nil, false},
		{bashLc("openssl x509 -in c.pem -noout -text"), nil, true},
		{bashLc("openssl genrsa --out k.pem"), nil, false},
		{bashLc("openssl rand -writerand /etc/x 4"), nil, false},
		{bashLc("env PATH=/w/bin ls"), nil, false},
		{bashLc("env -C /w ls"), nil, false},
		{bashLc("env -i ls"), nil, false},
		// Found by the second attack review of issue 12.
		{bashLc("rg -n foo"), nil, true},
		{bashLc("rg --pre ./x foo"), nil, false},
		{bashLc("rg --pre=./x foo"), nil, false},
		{bashLc("rg -uz foo"), nil, false},
		{bashLc("rg --hostname-bin ./x foo"), nil, false},
		{bashLc("fd -e go"), nil, true},
		{bashLc("fd -e go -x ./x"), nil, false},
		{bashLc("fd --exec-batch ./x"), nil, false},
		{bashLc("gawk '@include \"f.awk\"' f"), nil, false},
		{bashLc("gawk 'BEGIN{f=\"sys\" \"tem\"; @f(\"id\")}'"), nil, false},
		{bashLc("git rebase -x ./x HEAD~1"), nil, false},
		{bashLc("git rebase -ix ./x HEAD~1"), nil, false},
		{bashLc("git difftool -x ./x"), nil, false},
		{bashLc("git difftool --extcmd=./x"), nil, false},
		{bashLc("git bisect run ./x"), nil, false},
		{bashLc("git bisect good"), nil, true},
		{bashLc("git submodule foreach ./x"), nil, false},
		{bashLc("git submodule status"), nil, true},
		{bashLc("git clone --bare --template=./t u d"), nil, false},
		{bashLc("git clone -c core.hooksPath=./h u d"), nil, false},
		{bashLc("git clone --config=core.hooksPath=./h u d"), nil, false},
		{bashLc("git clone u d"), nil, true},
		{bashLc("git init --template ./t"), nil, false},
		{bashLc("git send-email --sendmail-cmd=./x p"), nil, false},
		{bashLc("xargs -a args.txt sed"), nil, false}, // -i FILE may come from args.txt
		{bashLc("cat list | xargs sort"), nil, false},
		{bashLc("cat list | xargs grep -l foo"), nil, true},
		{bashLc("printf -v PATH %s /w/bin && ls"), nil, false},
		{bashLc("printf '%s' x"), nil, true},
		{bashLc("read PATH < f && ls"), nil, false},
		{bashLc("hash -p ./x ls && ls"), nil, false},
		// Found by the third attack review of issue 12.
		{bashLc("sed -n -- '1e id' f"), nil, false},
		{bashLc("sed -n -- 'w /etc/x' f"), nil, false},
		{bashLc("sed -n -- 1p f"), nil, true},
		{bashLc("xargs -a args.txt xargs"), nil, false},
		{bashLc("xargs -a args.txt wc -l"), nil, true},
		{bashLc("xargs --process-slot-var=PATH ls"), nil, false},
		{bashLc("yq --in-place .a f.yaml"), nil, false},
		{bashLc("yq --in-p .a f.yaml"), nil, false},
		{bashLc("yq -s .a f.yaml"), nil, false},
		{bashLc("yq .a f.yaml"), nil, true},
		{bashLc("tree -i --noreport -o /etc/x"), nil, false},
		{bashLc("tree -L 2"), nil, true},
		{bashLc("kubectl get pods --kubeconfig ./kc.yaml"), nil, false},
		{bashLc("kubectl get pods"), nil, true},
		{bashLc("kubectl cp pod:/x ./y"), nil, false},
		{bashLc("kubectl foo"), nil, false}, // the plugin kubectl-foo, found on PATH
		{bashLc("curl -sw @fmt https://x"), nil, false},
		{bashLc("curl -sSw@fmt https://x"), nil, false},
		{bashLc("curl -sw '%{http_code}' https://x"), nil, true},
		{bashLc("curl --expand-output ./f https://x"), nil, false},
		{bashLc("curl --expand-write-out @fmt https://x"), nil, false},
		{bashLc("tree -R -H . -L 1"), nil, false},
		{bashLc("helm template ."), nil, false},
		{bashLc("xmllint -o out.xml in.xml"), nil, false},
		{bashLc("xmllint -output out.xml in.xml"), nil, false},
		{bashLc("xmllint --shell in.xml"), nil, false},
		{bashLc("xmllint --noout in.xml"), nil, true},
		{bashLc("curl --stder ./f https://x"), nil, false},
		{bashLc("curl --libc ./f https://x"), nil, false},
		{bashLc("curl --remote-name-a https://x"), nil, false},
		{bashLc("curl --write @fmt https://x"), nil, false},
		{bashLc("curl --write-o=@fmt https://x"), nil, false},
		{bashLc("curl --expand-stder ./f https://x"), nil, false},
		{bashLc("kubectl get pods --profile=cpu --profile-output=./p"), nil, false},
		{bashLc("kubectl get pods --cache-dir=./c"), nil, false},
		{bashLc("sqlite3 -readonly db .tables"), nil, false},
		{bashLc("curl -s -w '%output{/etc/x}%{http_code}' https://example.com"), nil, false},
		{bashLc("curl -s -w @fmt https://example.com"), nil, false},
		{bashLc("curl -s -w '%{http_code}' https://example.com"), nil, true},
		{bashLc("hg status"), nil, false},
	}
	for _, tt := range tests {
		r := Require(rules, Request{Argv: tt.argv, Policy: OnRequest, Sandboxed: true, Planted: tt.planted})
		if r.Outcome != Run || r.Unsandboxed != tt.want {
			t.Errorf("%q: outcome %d, unsandboxed %v; want run, unsandboxed %v", tt.argv, r.Outcome, r.Unsandboxed, tt.want)
		}
	}
}

// Every spelling that hides a script is looked into, or counted as
// opaque, which asks under strict rules (SPEC §7.1): a forbidden rm is
// never run past, nor a prompt rule.
func TestHiddenScripts(t *testing.T) {
	forbidden := rulesOf(t, `prefix_rule(pattern=["rm"], decision="forbidden")`)
	prompt := rulesOf(t, `prefix_rule(pattern=["rm"], decision="prompt")`)
	rmSeen := [][]string{
		{"bash", "-c", "--", "rm f"},
		{"bash", "-o", "errexit", "-c", "rm f"},
		{"bash", "-O", "extglob", "-c", "rm f"},
		{"bash", "+O", "extglob", "-c", "rm f"},
		{"bash", "-euo", "pipefail", "-c", "rm f"},
		{"bash", "--rcfile", "F", "-c", "rm f"},
		{"bash", "--init-file", "F", "-c", "rm f"},
		{"bash", "--norc", "--noprofile", "-c", "rm f"},
		{"bash", "-c", "-e", "rm f"},
		{"sh", "-ec", "rm f"},
		{"/usr/bin/dash", "-c", "rm f", "name"},
		{"busybox", "sh", "-c", "rm f"},
		{"fish", "-c", "rm f"},
		bashLc("bash -c 'rm f'"),
		bashLc("ls && sh -ec 'rm f'"),
		bashLc(`bash -c "sh -c 'bash -c \"rm f\"'"`),
		bashLc("env rm f"),
		bashLc("env -i A=1 rm f"),
		bashLc("env bash -c 'rm f'"),
		bashLc("timeout 5 rm f"),
		bashLc("timeout -s KILL 5 rm f"),
		bashLc("nohup rm f"),
		bashLc("nice -n 5 rm f"),
		bashLc("nice -5 rm f"),
		bashLc("command rm f"),
		bashLc("exec rm f"),
		bashLc("stdbuf -oL rm f"),
		bashLc("setsid -f rm f"),
		bashLc("xargs rm"),
		bashLc("xargs -0 -n1 rm"),
		bashLc("xargs -I{} rm {}"),
		bashLc("sudo -u bob rm f"),
		bashLc("doas rm f"),
		bashLc("find . -name x -exec rm {} ;"),
		bashLc("find . -execdir rm {} +"),
		bashLc("eval 'rm f'"),
		bashLc("eval rm f"),
		bashLc("trap 'rm f' EXIT"),
		bashLc("su -c 'rm f'"),
		bashLc("su bob -c 'rm f'"),
		bashLc("runuser -u bob -c 'rm f'"),
		bashLc("script -qc 'rm f' /dev/null"),
		bashLc("flock /tmp/l rm f"),
		bashLc("flock /tmp/l -c 'rm f'"),
		bashLc("watch rm f"),
		bashLc("watch -x rm f"),
		bashLc("time rm f"),
		bashLc("ionice -c3 rm f"),
		bashLc("taskset 1 rm f"),
		bashLc("chroot / rm f"),
		bashLc("echo $(bash -c 'rm f')"),
		{"./bash", "-c", "rm f"},
	}
	opaque := [][]string{
		bashLc("env -S 'rm f'"),
		bashLc("env --weird rm-free"),
		bashLc("timeout --weird 5 ls"),
		bashLc("bash"),
		bashLc("bash -i"),
		bashLc("sh -s"),
		bashLc("sudo -s"),
		bashLc("su"),
		bashLc("alias x=rm\nx f"),
		{"bash", "--weird-option", "-c", "ls"},
	}
	deep := "ls"
	for range maxDepth + 2 {
		deep = ShellJoin([]string{"bash", "-c", deep})
	}
	opaque = append(opaque, bashLc(deep))
	planted := func(name string) bool { return name == "./bash" || name == "/w/bin/zsh" }
	opaque = append(opaque, []string{"./bash", "-c", "ls"}, []string{"/w/bin/zsh", "-lc", "ls"})
	for _, argv := range rmSeen {
		req := Request{Argv: argv, Policy: OnRequest, Sandboxed: true, Planted: planted}
		if r := Require(forbidden, req); r.Outcome != Refuse || !strings.Contains(r.Reason, "forbids commands starting with `rm`") {
			t.Errorf("forbidden rm: %q: outcome %d %q; want it refused", argv, r.Outcome, r.Reason)
		}
		if r := Require(prompt, req); r.Outcome != Ask {
			t.Errorf("prompt rm: %q: outcome %d; want it asked", argv, r.Outcome)
		}
	}
	for _, argv := range opaque {
		req := Request{Argv: argv, Policy: OnRequest, Sandboxed: true, Planted: planted}
		if r := Require(forbidden, req); r.Outcome != Ask {
			t.Errorf("opaque under a forbidden rule: %q: outcome %d; want it asked", argv, r.Outcome)
		}
		req.Policy = Never
		if r := Require(forbidden, req); r.Outcome != Refuse {
			t.Errorf("opaque under never: %q: outcome %d; want it refused", argv, r.Outcome)
		}
		req.Policy = OnRequest
		want := Run
		if mentionsRm.MatchString(strings.Join(argv, " ")) {
			want = Ask // it may run rm -rf: §7.4's dangerous list would ask
		}
		if r := Require(NewRules(), req); r.Outcome != want {
			t.Errorf("opaque without strict rules: %q: outcome %d; want %d", argv, r.Outcome, want)
		}
	}
	// What is not hidden stays as it was.
	for _, argv := range [][]string{bashLc("ls && bash -c 'ls'"), bashLc("env A=1 ls"), bashLc("xargs echo"), bashLc("bash script.sh"),
		bashLc("find . -name '*.go'"), bashLc("timeout 5 make test")} {
		if r := Require(forbidden, Request{Argv: argv, Policy: OnRequest, Sandboxed: true}); r.Outcome != Run {
			t.Errorf("%q: outcome %d; want it run", argv, r.Outcome)
		}
	}
}

// SetsEnvironment sees every way a call changes the variables, options
// or program lookup of its later commands (SPEC §7.2).
func TestSetsEnvironment(t *testing.T) {
	for script, want := range map[string]bool{
		"git status":                          false,
		"cd sub && git status":                false,
		"printf '%s\\n' x && git status":      false,
		"HOME=/w git status":                  true,
		"export HOME=/w; git status":          true,
		"printf -v HOME %s /w && git status":  true,
		"read HOME < f && git status":         true,
		"mapfile -t A < f && git status":      true,
		"hash -p ./x git && git status":       true,
		"enable -f ./x.so git && git status":  true,
		"shopt -s expand_aliases; git status": true,
		"source ./env && git status":          true,
		"env -u HOME git status":              true,
		"command read HOME && git status":     true,
		"exec -l zsh -c 'git status'":         true,
		"exec -a -zsh zsh -c 'git status'":    true,
		"exec -c git status":                  true,
		"exec git status":                     false,
	} {
		if got := SetsEnvironment(bashLc(script)); got != want {
			t.Errorf("SetsEnvironment(%q) = %v, want %v", script, got, want)
		}
	}
}

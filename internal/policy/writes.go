package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// WritesFiles reports whether argv writes a file it is given (or runs a
// program of its options) where it would otherwise only read or print:
// the forms of SPEC §7.2 that keep a call allowed by rules in the
// sandbox, since the rule that allows `sort` was not written for
// `sort -o ~/.bashrc`. The program is known by its base name. Programs
// whose purpose is writing (cp, mv, tee with a file) are listed only where
// a reader may not expect it; a rule that allows cp allows cp.
func WritesFiles(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	w, ok := writers[filepath.Base(argv[0])]
	return ok && w(argv[1:])
}

// writers are the programs WritesFiles knows, by base name, each with
// the test of its arguments.
var writers = map[string]func(args []string) bool{
	"tee":    hasOperands(1),
	"sponge": hasOperands(1),
	"sort": func(args []string) bool {
		return hasOption(args, "o", "--output") || hasOption(args, "T", "--temporary-directory") ||
			hasOption(args, "", "--compress-program")
	},
	"shuf": outputOption, "iconv": outputOption, "base64": outputOption, "base32": outputOption, "basenc": outputOption,
	"uniq": hasOperands(2), "xxd": hasOperands(2), // uniq IN OUT
	"git": gitWrites,
	"tar": tarWrites, "bsdtar": tarWrites, "gtar": tarWrites,
	"find": func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(unsafeFindOptions, a) })
	},
	"sed": sedWrites,
	"awk": awkWrites, "gawk": awkWrites, "mawk": awkWrites, "nawk": awkWrites,
	"dd": func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "of=") })
	},
	"curl": func(args []string) bool {
		// curl 8.3 takes every long option as --expand-NAME too.
		args = slices.Clone(args)
		for i, a := range args {
			if rest, ok := strings.CutPrefix(a, "--expand-"); ok {
				args[i] = "--" + rest
			}
		}
		// -w '%output{FILE}' (curl 8.3) writes, and so may a format
		// read from a file (-w @FILE, -sw@FILE).
		writeOut := slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "%output{") }) ||
			slices.ContainsFunc(optionValues(args, "w", "--write-out"), func(v string) bool { return strings.HasPrefix(v, "@") })
		return writeOut || hasOption(args, "o", "--output") || hasOption(args, "O", "--remote-name") ||
			hasOption(args, "D", "--dump-header") || hasOption(args, "c", "--cookie-jar") ||
			hasOption(args, "K", "--config") || slices.ContainsFunc([]string{"--remote-name-all", "--output-dir", "--trace",
			"--trace-ascii", "--libcurl", "--stderr", "--etag-save", "--hsts", "--alt-svc", "--create-dirs"},
			func(o string) bool { return hasOption(args, "", o) })
	},
	"wget": func([]string) bool { return true }, // saves what it fetches unless told otherwise
	"gpg":  outputOption, "gpg2": outputOption,
	"openssl": func(args []string) bool {
		// Files it writes, and engines and providers, which are code.
		return slices.ContainsFunc(args, func(a string) bool {
			opt, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
			return slices.Contains([]string{"-out", "-keyout", "-writerand", "-engine", "-provider", "-provider-path"}, opt) ||
				slices.Contains([]string{"out", "keyout", "writerand", "engine", "provider", "provider-path"}, opt)
		})
	},
	"less": func(args []string) bool {
		return hasOption(args, "o", "--log-file") || hasOption(args, "O", "--LOG-FILE")
	},
	// mikefarah's yq (-i, --inplace, -s writes a file per document) and
	// the python yq of Debian with its xq and tomlq (--in-place).
	"yq": yqWrites, "xq": yqWrites, "tomlq": yqWrites,
	"time": outputOption,
	"rg": func(args []string) bool {
		// A preprocessor, the decompressors of -z (found on PATH), and
		// the program that names the host for hyperlinks.
		return hasOption(args, "", "--pre") || hasOption(args, "z", "--search-zip") || hasOption(args, "", "--hostname-bin")
	},
	"fd":     fdWrites,
	"fdfind": fdWrites,
	// tree -R reruns itself with -o 00Tree.html in each directory.
	"tree":    func(args []string) bool { return hasOption(args, "o", "") || hasOption(args, "R", "") },
	"kubectl": kubectlWrites,
	// helm runs plugins, post-renderers and the programs a kubeconfig
	// names, and writes charts and manifests.
	"helm": func([]string) bool { return true },
	// SQL writes files (VACUUM INTO, ATTACH) and dot-commands run
	// programs (.shell, .system): a rule for sqlite3 is one for all of it.
	"sqlite3": func([]string) bool { return true },
	// xmllint takes its long options with one dash too; its shell
	// writes files (save, write).
	"xmllint": func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			opt, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			return strings.HasPrefix(a, "-") && (opt == "o" || opt == "output" || opt == "shell")
		})
	},
	"bat": batWrites, "batcat": batWrites,
	"ag": func(args []string) bool { return hasOption(args, "", "--pager") },
	// Other version control systems read their repository's
	// configuration, which names hooks; execd checks git's only.
	"hg": func([]string) bool { return true }, "jj": func([]string) bool { return true },
}

func yqWrites(args []string) bool {
	return hasOption(args, "i", "--inplace") || hasOption(args, "", "--in-place") || hasOption(args, "s", "--split-exp")
}

// kubectlWrites: a kubeconfig names programs it runs (users[].user.exec),
// some global options write files, cp writes local files, and a command
// kubectl does not have runs the plugin kubectl-NAME from PATH, a program
// the rules never checked; only the commands that read are known.
func kubectlWrites(args []string) bool {
	if slices.ContainsFunc([]string{"--kubeconfig", "--profile-output", "--cache-dir", "--log-file", "--log-dir"},
		func(o string) bool { return hasOption(args, "", o) }) {
		return true
	}
	ops := operands(args)
	return len(ops) == 0 || !slices.Contains([]string{"get", "describe", "logs", "explain", "api-resources",
		"api-versions", "version", "cluster-info", "top", "events", "auth"}, ops[0])
}

func batWrites(args []string) bool {
	return hasOption(args, "", "--pager") || hasOption(args, "", "--paging")
}

func outputOption(args []string) bool { return hasOption(args, "o", "--output") }

func fdWrites(args []string) bool {
	return hasOption(args, "x", "--exec") || hasOption(args, "X", "--exec-batch")
}

// hasOperands returns a test for at least n operands.
func hasOperands(n int) func([]string) bool {
	return func(args []string) bool { return len(operands(args)) >= n }
}

// hasOption reports whether args give the short option s (alone, with a
// value attached, or inside a cluster: -uo F) or the long option long
// (alone or with =value, or abbreviated: GNU programs take any
// unambiguous prefix, --out for --output). Either may be "".
func hasOption(args []string, s, long string) bool {
	for _, a := range args {
		opt, _, _ := strings.Cut(a, "=")
		switch {
		case a == "--":
			return false
		case long != "" && len(opt) > 2 && strings.HasPrefix(opt, "--") && strings.HasPrefix(long, opt):
			return true
		case s != "" && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], s):
			return true
		}
	}
	return false
}

// optionValues returns the values args give the option -s (-s V, -sV,
// and in a cluster: -xs V, -xsV) or --long (--long V, --long=V, and
// abbreviated as hasOption takes it).
func optionValues(args []string, s, long string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out
		case len(a) > 2 && strings.HasPrefix(a, "--") && strings.HasPrefix(long, a): // abbreviated too
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--") && strings.Contains(a, "=") && strings.HasPrefix(long, a[:strings.Index(a, "=")]):
			out = append(out, a[strings.Index(a, "=")+1:])
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], s):
			switch v := a[1+strings.Index(a[1:], s)+len(s):]; {
			case v != "":
				out = append(out, v)
			case i+1 < len(args):
				out = append(out, args[i+1])
				i++
			}
		}
	}
	return out
}

// sedWrites reports whether sed edits in place, reads its script from a
// file, or has a script that may write or execute (w, W, e: any such
// letter counts, which also stops some scripts that only read). Options
// it does not know count too.
func sedWrites(args []string) bool {
	var scripts []string
	script := false // a script came from -e
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "--":
			if !script && i+1 < len(args) {
				scripts = append(scripts, args[i+1]) // the first operand, after -- too
			}
			i = len(args)
		case strings.HasPrefix(a, "--"):
			switch long := longName(opt, "--expression", "--file", "--in-place", "--line-length", "--null-data",
				"--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--posix", "--debug",
				"--sandbox", "--follow-symlinks", "--zero-terminated", "--binary"); long {
			case "--expression":
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i]
				}
				scripts, script = append(scripts, val), true
			case "--file", "--in-place", "", "--follow-symlinks":
				return true
			case "--line-length":
				if !hasVal {
					i++
				}
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				switch c := a[j]; {
				case c == 'e':
					v := a[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						v = args[i]
					}
					scripts, script = append(scripts, v), true
					j = len(a)
				case c == 'l':
					if j == len(a)-1 {
						i++
					}
					j = len(a)
				case strings.IndexByte("nErsuz", c) < 0:
					return true // -i, -f, and what sed does not document
				}
			}
		case !script:
			scripts, script = append(scripts, a), true // the first operand is the script
		}
	}
	return slices.ContainsFunc(scripts, func(s string) bool { return strings.ContainsAny(s, "wWe") })
}

// longName returns which of names the long option opt (maybe abbreviated)
// is, or "" when none (or more than one: GNU refuses an ambiguous one).
func longName(opt string, names ...string) string {
	found := ""
	for _, n := range names {
		switch {
		case opt == n:
			return n
		case len(opt) > 2 && strings.HasPrefix(n, opt):
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// awkWrites reports whether an awk program may write or run something:
// a redirection or pipe (print > "f", print | "sh"), system(), getline,
// gawk's @ (@include and @load read code from files, @f() calls a
// function by a name made at run time, "sys" "tem" too), a program or
// library read from a file, or any option but -v and -F (gawk's -W, -e,
// -i, -l, -E load or run code).
func awkWrites(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-v" || a == "-F":
			i++ // an assignment or a separator
		case strings.HasPrefix(a, "-v") || strings.HasPrefix(a, "-F"):
		case strings.HasPrefix(a, "--assign") || strings.HasPrefix(a, "--field-separator"):
			if !strings.Contains(a, "=") {
				i++
			}
		case a == "--":
		case strings.HasPrefix(a, "-"):
			return true
		default:
			return strings.ContainsAny(a, ">|@") || strings.Contains(a, "system") || strings.Contains(a, "getline")
		}
	}
	return false
}

// gitWrites reports whether git ARGS writes a file its options name or
// runs a program they name: --output (and format-patch's -o and
// --output-directory), grep's -O, the upload and receive programs of
// fetch, clone, pull, ls-remote and push, archive's --exec and --output,
// the external diff and text conversion programs (--ext-diff,
// --textconv), the commands of rebase -x, difftool -x, bisect run,
// submodule foreach, filter-branch and send-email's --*-cmd and
// --smtp-server, and the hooks and configuration a new repository gets
// from clone's and init's --template and clone's -c.
func gitWrites(args []string) bool {
	sub, rest := "", args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-C" || a == "-c" {
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			sub, rest = a, args[i+1:]
			break
		}
	}
	if hasOption(rest, "", "--output") || hasOption(rest, "", "--ext-diff") || hasOption(rest, "", "--textconv") ||
		hasOption(rest, "", "--exec") || hasOption(rest, "", "--upload-pack") || hasOption(rest, "", "--receive-pack") {
		return true
	}
	switch sub {
	case "format-patch":
		return hasOption(rest, "o", "--output-directory")
	case "archive":
		return hasOption(rest, "o", "")
	case "grep":
		return hasOption(rest, "O", "--open-files-in-pager")
	case "fetch", "pull", "ls-remote":
		return hasOption(rest, "u", "")
	case "clone":
		return hasOption(rest, "u", "") || hasOption(rest, "c", "--config") || hasOption(rest, "", "--template")
	case "init":
		return hasOption(rest, "", "--template")
	case "rebase":
		return hasOption(rest, "x", "")
	case "difftool":
		return hasOption(rest, "x", "--extcmd")
	case "bisect":
		return len(rest) > 0 && rest[0] == "run"
	case "submodule":
		return slices.Contains(rest, "foreach")
	case "filter-branch":
		return true
	case "send-email":
		return slices.ContainsFunc([]string{"--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"},
			func(o string) bool { return hasOption(rest, "", o) })
	}
	return false
}

// tarWrites reports whether tar does anything but list an archive: list
// (-t, --list) with -f, -v, -z, -j, -J and their long names only.
func tarWrites(args []string) bool {
	list := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--list":
			list = true
		case slices.Contains([]string{"--verbose", "--gzip", "--bzip2", "--xz"}, a):
		case a == "--file" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "--file="):
		case strings.HasPrefix(a, "--"):
			return true
		case strings.HasPrefix(a, "-") || (i == 0 && !strings.Contains(a, "/")):
			// Short options, or the old form whose first word is a
			// cluster without its dash (tar tf x.tar).
			for j, c := range strings.TrimPrefix(a, "-") {
				switch {
				case c == 't':
					list = true
				case c == 'f':
					if j == len(strings.TrimPrefix(a, "-"))-1 {
						i++ // the archive
					}
				case !strings.ContainsRune("vzjJ", c):
					return true
				}
			}
		}
	}
	return !list
}

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
	args := argv[1:]
	switch filepath.Base(argv[0]) {
	case "tee", "sponge":
		return len(operands(args)) > 0
	case "sort":
		return hasOption(args, "o", "--output") || hasOption(args, "T", "--temporary-directory") ||
			hasOption(args, "", "--compress-program")
	case "shuf", "iconv", "base64", "base32", "basenc":
		return hasOption(args, "o", "--output")
	case "uniq", "xxd":
		return len(operands(args)) > 1 // uniq IN OUT
	case "git":
		return hasOption(args, "o", "--output") || hasOption(args, "", "--output-directory")
	case "find":
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(unsafeFindOptions, a) })
	case "sed":
		return sedWrites(args)
	case "awk", "gawk", "mawk", "nawk":
		return awkWrites(args)
	case "dd":
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "of=") })
	case "curl":
		return hasOption(args, "o", "--output") || hasOption(args, "O", "--remote-name") ||
			hasOption(args, "D", "--dump-header") || hasOption(args, "c", "--cookie-jar") ||
			hasOption(args, "K", "--config") || slices.ContainsFunc(args, func(a string) bool {
			for _, o := range []string{"--remote-name-all", "--output-dir", "--trace", "--trace-ascii", "--libcurl",
				"--stderr", "--etag-save", "--hsts", "--alt-svc", "--create-dirs"} {
				if a == o || strings.HasPrefix(a, o+"=") {
					return true
				}
			}
			return false
		})
	case "wget":
		return true // saves what it fetches unless told otherwise
	case "gpg", "gpg2":
		return hasOption(args, "o", "--output")
	case "openssl":
		return slices.ContainsFunc(args, func(a string) bool { return a == "-out" || a == "-keyout" })
	case "less":
		return hasOption(args, "o", "--log-file") || hasOption(args, "O", "--LOG-FILE")
	case "yq":
		return hasOption(args, "i", "--inplace")
	case "time":
		return hasOption(args, "o", "--output")
	}
	return false
}

// hasOption reports whether args give the short option s (alone, with a
// value attached, or inside a cluster: -uo F) or the long option long
// (alone or with =value). Either may be "".
func hasOption(args []string, s, long string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case long != "" && (a == long || strings.HasPrefix(a, long+"=")):
			return true
		case s != "" && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], s):
			return true
		}
	}
	return false
}

// sedWrites reports whether sed edits in place, reads its script from a
// file, or has a script that may write or execute (w, W, e: any such
// letter counts, which also stops some scripts that only read).
func sedWrites(args []string) bool {
	if hasOption(args, "i", "--in-place") || hasOption(args, "f", "--file") || hasOption(args, "s", "--separate") {
		return true
	}
	scripts, script := []string{}, false
	for i, a := range args {
		switch {
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
			}
			script = true
		case strings.HasPrefix(a, "--expression="):
			scripts, script = append(scripts, strings.TrimPrefix(a, "--expression=")), true
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			scripts, script = append(scripts, a[2:]), true
		}
	}
	if !script {
		if ops := operands(args); len(ops) > 0 {
			scripts = append(scripts, ops[0])
		}
	}
	return slices.ContainsFunc(scripts, func(s string) bool { return strings.ContainsAny(s, "wWe") })
}

// awkWrites reports whether an awk program may write or run something:
// a redirection or pipe (print > "f", print | "sh"), system(), or a
// program read from a file.
func awkWrites(args []string) bool {
	if hasOption(args, "f", "--file") || hasOption(args, "i", "--include") || hasOption(args, "", "--exec") {
		return true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-v" || a == "-F":
			i++ // an assignment or a separator
		case strings.HasPrefix(a, "-"):
		default:
			return strings.ContainsAny(a, ">|") || strings.Contains(a, "system") || strings.Contains(a, "getline")
		}
	}
	return false
}

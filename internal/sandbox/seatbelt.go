package sandbox

import (
	"fmt"
	"strings"
)

// seatbeltDevices are the devices a shell writes in either mode.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/dtracehelper"}

// SeatbeltProfile is the macOS sandbox-exec profile (SPEC §8.3): deny by
// default; read everywhere; run programs; write only the terminal devices
// and beneath the writable roots except the protected paths; the network
// only when allowed, and UNIX sockets (the user's own daemons) only with
// unixSockets too.
func SeatbeltProfile(roots, protected []string, network, unixSockets bool) string {
	var b strings.Builder
	b.WriteString(`(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow file-read*)
(allow sysctl-read)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow ipc-posix-sem)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.coreservices.launchservicesd"))
`)
	b.WriteString("(allow file-write*")
	for _, d := range seatbeltDevices {
		fmt.Fprintf(&b, "\n  (literal %s)", sbString(d))
	}
	b.WriteString("\n  (regex #\"^/dev/ttys[0-9]+$\"))\n")
	for _, root := range roots {
		var excluded []string
		for _, prot := range protected {
			if prot == root || strings.HasPrefix(prot, strings.TrimSuffix(root, "/")+"/") {
				excluded = append(excluded, prot)
			}
		}
		if len(excluded) == 0 {
			fmt.Fprintf(&b, "(allow file-write* (subpath %s))\n", sbString(root))
			continue
		}
		fmt.Fprintf(&b, "(allow file-write* (require-all (subpath %s)", sbString(root))
		for _, ex := range excluded {
			fmt.Fprintf(&b, "\n  (require-not (literal %s)) (require-not (subpath %s))", sbString(ex), sbString(ex))
		}
		b.WriteString("))\n")
	}
	switch {
	case network && unixSockets:
		b.WriteString("(allow network*)\n(allow system-socket)\n")
	case network:
		b.WriteString(`(allow network-outbound (remote ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-bind (local ip "*:*"))
(allow system-socket)
`)
	}
	return b.String()
}

// sbString quotes s as a profile string literal.
func sbString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

//go:build linux && !amd64 && !arm64

package sandbox

// No filter is built for this architecture (on 386 and arm the socket
// calls go through socketcall, which needs its own filter): Probe reports
// seccomp as unavailable, so enforced modes fail closed.
const (
	nativeArch = 0
	x32Bit     = 0
)

var (
	alwaysDenied, networkDenied []uint32
	chmodCalls                  []struct{ nr, modeArg uint32 }
)

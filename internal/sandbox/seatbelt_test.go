package sandbox

import (
	"strings"
	"testing"
)

func TestSeatbeltProfile(t *testing.T) {
	ro := SeatbeltProfile(nil, nil, false, false)
	ws := SeatbeltProfile([]string{"/w", `/odd "dir"`}, []string{"/w/.git", "/elsewhere/gitdir"}, false, false)
	net := SeatbeltProfile([]string{"/w"}, nil, true, false)
	netUnix := SeatbeltProfile([]string{"/w"}, nil, true, true)
	tests := []struct {
		name, profile string
		has, lacks    []string
	}{
		{"read-only", ro,
			[]string{"(version 1)\n(deny default)\n", "(allow file-read*)", `(literal "/dev/null")`},
			[]string{"subpath", "network"}},
		{"workspace-write", ws,
			[]string{
				"(allow file-write* (require-all (subpath \"/w\")\n  (require-not (literal \"/w/.git\")) (require-not (subpath \"/w/.git\"))))\n",
				"(allow file-write* (subpath \"/odd \\\"dir\\\"\"))\n",
			},
			[]string{"/elsewhere", "network"}},
		{"network", net, []string{`(allow network-outbound (remote ip "*:*"))`, "(allow file-write* (subpath \"/w\"))"},
			[]string{"network*", "unix"}},
		{"network and UNIX sockets", netUnix, []string{"(allow network*)"}, nil},
	}
	for _, tt := range tests {
		for _, h := range tt.has {
			if !strings.Contains(tt.profile, h) {
				t.Errorf("%s profile lacks %q:\n%s", tt.name, h, tt.profile)
			}
		}
		for _, l := range tt.lacks {
			if strings.Contains(tt.profile, l) {
				t.Errorf("%s profile has %q:\n%s", tt.name, l, tt.profile)
			}
		}
	}
}

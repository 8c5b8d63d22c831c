package test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// A host that never reads execd's stderr: once the pipe is full, log
// lines are dropped, never waited on. Every call is still answered, and
// stdin EOF still ends execd (startRaw's cleanup checks it) (SPEC §11).
func TestStderrNeverRead(t *testing.T) {
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { errR.Close(); errW.Close() }) // open, never read: writes block once it is full
	c := startRawWith(t, fullAccess, func(cmd *exec.Cmd) { cmd.Stderr = errW })
	c.initialize()
	for i := 1; i <= 300; i++ { // about 4 log lines each: well past 64 KiB
		id := fmt.Sprint(i)
		c.send(toolCall(id, "shell", map[string]any{"command": []string{"true"}}))
		if m := c.recvID(`"` + id + `"`); m.Error != nil {
			t.Fatalf("call %d: %+v", i, m.Error)
		}
	}
}

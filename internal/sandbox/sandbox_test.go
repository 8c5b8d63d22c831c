package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	_, err := ParseMode("workspace_write")
	if err == nil || !strings.Contains(err.Error(), `"workspace_write"`) || !strings.Contains(err.Error(), "workspace-write") {
		t.Errorf("ParseMode of a bad name = %v; want an error naming it and the valid modes", err)
	}
}

func TestCheckFailsClosedForEnforcedModes(t *testing.T) {
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		err := Check(m)
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Mode != m {
			t.Fatalf("Check(%s) = %v, want *UnavailableError", m, err)
		}
		msg := err.Error()
		for _, want := range []string{string(m), "not available on this build", "danger-full-access"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Check(%s) message %q lacks %q", m, msg, want)
			}
		}
	}
	for _, m := range []Mode{DangerFullAccess, ExternalSandbox} {
		if err := Check(m); err != nil {
			t.Errorf("Check(%s) = %v, want nil", m, err)
		}
	}
}

func TestUnavailableSuggestsExternalSandboxInContainers(t *testing.T) {
	e := &UnavailableError{Mode: WorkspaceWrite, Missing: "x", InContainer: true}
	if !strings.Contains(e.Error(), `"external-sandbox"`) {
		t.Errorf("message in a container %q does not suggest external-sandbox", e.Error())
	}
	e.InContainer = false
	if strings.Contains(e.Error(), "runs in a container") {
		t.Errorf("message outside a container %q claims a container", e.Error())
	}
}

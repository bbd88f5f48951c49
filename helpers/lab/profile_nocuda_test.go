//go:build nocuda

package lab

import (
	"strings"
	"testing"
)

// A lesson without recorded profiles says how to record them; one with them shows them.
func TestShowProfileWithoutARecording(t *testing.T) {
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.ShowProfile("99_none"); err == nil || !strings.Contains(err.Error(), "make profile") {
		t.Errorf("no recorded profile: %v", err)
	}
}

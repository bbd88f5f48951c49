package lab

import (
	"strings"
	"testing"
)

func TestStepNamed(t *testing.T) {
	steps := []string{"1 naive", "3 implicit GEMM", "33 more"}
	id := func(s string) string { return s }
	for name, want := range map[string]string{"3": "3 implicit GEMM", "3 implicit GEMM": "3 implicit GEMM", "33": "33 more", "1 naive": "1 naive"} {
		if got, err := StepNamed("x", steps, id, name); err != nil || got != want {
			t.Errorf("StepNamed(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := StepNamed("conv", steps, id, "3 impl"); err == nil || !strings.Contains(err.Error(), `conv: no step "3 impl"`) || !strings.Contains(err.Error(), "1 naive") {
		t.Errorf("a partial name: %v", err)
	}
}

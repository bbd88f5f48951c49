package sass

import (
	"strings"
	"testing"
)

// The collapsed listing stops after max instructions and says how many it left out; the full text
// keeps them all.
func TestTextUpTo(t *testing.T) {
	var ins []Instruction
	for i := 0; i < 5; i++ {
		ins = append(ins, Instruction{Offset: 16 * i, Line: 1, Op: "FFMA", Args: "R1, R2, R3, R1 ;"})
	}
	l := &Listing{Source: "x.cu", Code: "acc += a * b;", Arch: "sm_90", Kernels: []Kernel{{Name: "k", Instructions: ins}}}
	all, left := l.TextUpTo(0)
	if left != 0 || strings.Count(all, "FFMA") != 5 || all != l.Text() {
		t.Errorf("TextUpTo(0) left %d and has %d FFMA:\n%s", left, strings.Count(all, "FFMA"), all)
	}
	some, left := l.TextUpTo(2)
	if left != 3 || strings.Count(some, "FFMA") != 2 {
		t.Errorf("TextUpTo(2) left %d and has %d FFMA:\n%s", left, strings.Count(some, "FFMA"), some)
	}
}

// Package sass shows the machine code a kernel became: NVRTC compiles the source for a real
// architecture (a cubin, compile.CompileCubin), nvdisasm disassembles it into SASS, and this package
// reads that listing into instructions, each with the source line it came from, and counts what the
// lessons talk about: global loads and stores by width, shared memory traffic, FFMA, tensor-core
// instructions, barriers, local (spill) traffic, cp.async and TMA.
//
//	lst, err := sass.Of(src, compile.Options{Arch: "sm_90"})
//	if err != nil { ... }
//	t := sass.CountTable(lst)   // one column per kernel
//
// No GPU is needed: only NVRTC and nvdisasm (Tool says which nvdisasm runs). A listing can be
// recorded (NewRecord, Save: results/sass/<lesson>.json) and found again only for exactly the same
// source and options (Find), for a machine whose NVRTC cannot compile that architecture.
package sass

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"regexp"
	"strconv"
	"strings"
)

// Instruction is one SASS instruction.
type Instruction struct {
	Offset int    // byte offset in the kernel's code
	Pred   string // its predicate guard ("@P0", "@!P1"), "" when it has none
	Op     string // the opcode with its modifiers: "LDG.E.128", "FFMA", "BAR.SYNC.DEFER_BLOCKING"
	Args   string // the operands as nvdisasm writes them
	File   string // the source file it came from ("" without line information)
	Line   int    // the source line (0 without line information)
}

// Base is the opcode without modifiers: "LDG" for "LDG.E.128".
func (in Instruction) Base() string {
	base, _, _ := strings.Cut(in.Op, ".")
	return base
}

// Never reports whether the instruction can never execute (guarded by @!PT: padding the compiler
// leaves, which the counts skip).
func (in Instruction) Never() bool { return in.Pred == "@!PT" }

// Bits is the width in bits of a memory instruction's access per thread: 128 for LDG.E.128, 64 for
// .64, 16 or 8 for .U16/.S16/.U8/.S8, 32 otherwise.
func (in Instruction) Bits() int {
	for _, m := range strings.Split(in.Op, ".")[1:] {
		switch m {
		case "128":
			return 128
		case "64":
			return 64
		case "U16", "S16":
			return 16
		case "U8", "S8":
			return 8
		}
	}
	return 32
}

// Kernel is one function of the listing (a kernel, with the device functions nvdisasm puts in its
// section) and its instructions in order.
type Kernel struct {
	Name         string
	Instructions []Instruction
}

// Listing is a disassembled cubin.
type Listing struct {
	Source string // the source's name
	Code   string // the source's text, when known (Of sets it): the listing quotes its lines
	Arch   string // the real architecture, "sm_90"
	NVRTC  string // the NVRTC version that compiled it
	Tool   string // the nvdisasm that disassembled it: version and path
	// LineInfo says the machine code keeps its source lines (compile.Cubin.LineInfo).
	LineInfo bool
	Kernels  []Kernel // in the order of the listing
	// Recorded is the receipt of the record the listing was read from (Find), nil for a listing
	// made here.
	Recorded *Receipt
	// Unbuildable is why the listing was not compiled here (this NVRTC's refusal of the
	// architecture), for a recorded listing shown in its place.
	Unbuildable *compile.ArchError
}

// Kernel returns the kernel named name.
func (l *Listing) Kernel(name string) (Kernel, bool) {
	for _, k := range l.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

var (
	sectionLine = regexp.MustCompile(`^\s*\.section\s+\.text\.([^,\s]+)`)
	fileLine    = regexp.MustCompile(`//## File "([^"]*)", line (\d+)`)
	instLine    = regexp.MustCompile(`^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;`)
)

// Parse reads nvdisasm's listing of a cubin, printed with --print-line-info (-g) and -c: one
// Kernel per .text section, each instruction with the source line of the "//## File" comment above
// it. It is an error when the text holds no instruction at all.
func Parse(text string) ([]Kernel, error) {
	var out []Kernel
	file, line := "", 0
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if m := sectionLine.FindStringSubmatch(l); m != nil {
			out = append(out, Kernel{Name: m[1]})
			file, line = "", 0
			continue
		}
		if m := fileLine.FindStringSubmatch(l); m != nil {
			file = m[1]
			line, _ = strconv.Atoi(m[2])
			continue
		}
		m := instLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("nvdisasm listing: instruction %q before any .text section", strings.TrimSpace(l))
		}
		off, _ := strconv.ParseInt(m[1], 16, 64)
		in := Instruction{Offset: int(off), File: file, Line: line}
		body := m[2]
		if strings.HasPrefix(body, "@") {
			in.Pred, body, _ = strings.Cut(body, " ")
			body = strings.TrimSpace(body)
		}
		in.Op, in.Args, _ = strings.Cut(body, " ")
		in.Args = strings.TrimSpace(in.Args)
		out[len(out)-1].Instructions = append(out[len(out)-1].Instructions, in)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("nvdisasm listing holds no instruction (%d bytes of text)", len(text))
	}
	return out, nil
}

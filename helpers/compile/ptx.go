package compile

import (
	"fmt"
	"strconv"
	"strings"
)

// Instruction is one instruction of a kernel's PTX: its opcode ("ld.global.v4.u32") and, for a
// load or store, the bytes it moves per thread (vector width times element size).
type Instruction struct {
	Op    string
	Bytes int
}

// Is reports whether the opcode starts with prefix ("st.global", "bar.sync", "ld.shared").
func (i Instruction) Is(prefix string) bool {
	return i.Op == prefix || strings.HasPrefix(i.Op, prefix+".")
}

// Instructions lists the instructions of the body of kernel (its .entry) in ptx, in order, so a
// check can see without a GPU what a kernel does: whether it stores to global memory at all, waits
// for its block, or loads 16 bytes at a time.
func Instructions(ptx, kernel string) ([]Instruction, error) {
	start := strings.Index(ptx, ".entry "+kernel+"(")
	if start < 0 {
		return nil, fmt.Errorf("the PTX defines no kernel %s", kernel)
	}
	body := ptx[start:]
	open := strings.Index(body, "\n{")
	if open < 0 {
		return nil, fmt.Errorf("kernel %s: no body in the PTX", kernel)
	}
	body = body[open+2:]
	// The body ends at the last closing brace before the next function (inline asm opens and closes
	// braces of its own inside it).
	for _, next := range []string{"\n.visible ", "\n.entry ", "\n.func ", "\n.weak "} {
		if i := strings.Index(body, next); i >= 0 {
			body = body[:i]
		}
	}
	if end := strings.LastIndex(body, "\n}"); end >= 0 {
		body = body[:end]
	}
	var out []Instruction
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "{}"))
		if line == "" || strings.HasPrefix(line, ".") || strings.HasPrefix(line, "//") || strings.HasSuffix(line, ":") {
			continue
		}
		if strings.HasPrefix(line, "@") { // a predicate guard: @%p1 or @!%p1
			if sp := strings.IndexAny(line, " \t"); sp >= 0 {
				line = strings.TrimSpace(line[sp:])
			}
		}
		op := line
		if sp := strings.IndexAny(line, " \t;"); sp >= 0 {
			op = line[:sp]
		}
		in := Instruction{Op: op}
		if in.Is("ld") || in.Is("st") {
			in.Bytes = accessBytes(op)
		}
		out = append(out, in)
	}
	return out, nil
}

// accessBytes is the bytes one thread moves with a load or store opcode: .v2/.v4 times the
// element type's size (.u16, .f32, .b64, ...).
func accessBytes(op string) int {
	width, size := 1, 0
	for _, p := range strings.Split(op, ".") {
		switch {
		case p == "v2" || p == "v4" || p == "v8":
			width, _ = strconv.Atoi(p[1:])
		case len(p) >= 2 && strings.ContainsRune("usbf", rune(p[0])):
			if bits, err := strconv.Atoi(p[1:]); err == nil && bits%8 == 0 {
				size = bits / 8
			}
		}
	}
	return width * size
}

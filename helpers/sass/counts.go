package sass

import "strings"

// Class is one kind of instruction the lessons talk about: a row of the count table.
type Class struct {
	Name   string // as the table writes it: "global loads, 128-bit"
	SASS   string // the opcodes it counts, as a reader would search the listing: "LDG.E.128"
	Always bool   // shown even when no kernel has one (its absence is the point: no spills, no 16-byte load)
	match  func(in Instruction) bool
}

func op(base string) func(Instruction) bool {
	return func(in Instruction) bool { return in.Base() == base }
}

func opBits(base string, bits ...int) func(Instruction) bool {
	return func(in Instruction) bool {
		if in.Base() != base {
			return false
		}
		for _, b := range bits {
			if in.Bits() == b {
				return true
			}
		}
		return false
	}
}

// Classes are the rows of the count table, in order. Each instruction counts in at most one.
var Classes = []Class{
	{Name: "global loads, 8-32-bit", SASS: "LDG.E", Always: true, match: opBits("LDG", 8, 16, 32)},
	{Name: "global loads, 64-bit", SASS: "LDG.E.64", Always: true, match: opBits("LDG", 64)},
	{Name: "global loads, 128-bit", SASS: "LDG.E.128", Always: true, match: opBits("LDG", 128)},
	{Name: "global stores, 8-32-bit", SASS: "STG.E", Always: true, match: opBits("STG", 8, 16, 32)},
	{Name: "global stores, 64-bit", SASS: "STG.E.64", Always: true, match: opBits("STG", 64)},
	{Name: "global stores, 128-bit", SASS: "STG.E.128", Always: true, match: opBits("STG", 128)},
	{Name: "global atomics and reductions", SASS: "ATOMG, RED", match: func(in Instruction) bool { return in.Base() == "ATOMG" || in.Base() == "RED" }},
	{Name: "shared loads, 8-32-bit", SASS: "LDS", match: opBits("LDS", 8, 16, 32)},
	{Name: "shared loads, 64-bit", SASS: "LDS.64", match: opBits("LDS", 64)},
	{Name: "shared loads, 128-bit", SASS: "LDS.128", match: opBits("LDS", 128)},
	{Name: "shared matrix loads (ldmatrix)", SASS: "LDSM", match: op("LDSM")},
	{Name: "shared stores", SASS: "STS", match: op("STS")},
	{Name: "shared atomics", SASS: "ATOMS", match: op("ATOMS")},
	{Name: "cp.async global to shared", SASS: "LDGSTS", match: op("LDGSTS")},
	{Name: "cp.async waits", SASS: "LDGDEPBAR, DEPBAR", match: func(in Instruction) bool { return in.Base() == "LDGDEPBAR" || in.Base() == "DEPBAR" }},
	{Name: "TMA copies", SASS: "UTMALDG, UTMASTG, UBLKCP", match: func(in Instruction) bool {
		b := in.Base()
		return b == "UTMALDG" || b == "UTMASTG" || b == "UBLKCP" || b == "UTMAPF"
	}},
	{Name: "mbarrier operations", SASS: "SYNCS", match: op("SYNCS")},
	{Name: "generic loads and stores (distributed shared memory, ...)", SASS: "LD, ST", match: func(in Instruction) bool { return in.Base() == "LD" || in.Base() == "ST" }},
	{Name: "local loads (spills)", SASS: "LDL", Always: true, match: op("LDL")},
	{Name: "local stores (spills)", SASS: "STL", Always: true, match: op("STL")},
	{Name: "FP32 fused multiply-adds", SASS: "FFMA", match: op("FFMA")},
	{Name: "FP16x2 fused multiply-adds (some only move registers)", SASS: "HFMA2", match: op("HFMA2")},
	{Name: "tensor core mma.sync", SASS: "HMMA", match: op("HMMA")},
	{Name: "tensor core wgmma (Hopper)", SASS: "HGMMA", match: op("HGMMA")},
	{Name: "special functions (exp, rcp, ...)", SASS: "MUFU", match: op("MUFU")},
	{Name: "warp shuffles", SASS: "SHFL", match: op("SHFL")},
	{Name: "block barriers", SASS: "BAR", match: op("BAR")},
}

// Count is how many instructions of a class a kernel holds (in its code, not executed).
type Count struct {
	Class Class
	N     int
}

// Counts counts k's instructions by class, every class in the order of Classes (zeros included),
// leaving out those that can never execute (@!PT). Total is every instruction counted.
func Counts(k Kernel) (counts []Count, total int) {
	counts = make([]Count, len(Classes))
	for i, c := range Classes {
		counts[i].Class = c
	}
	for _, in := range k.Instructions {
		if in.Never() {
			continue
		}
		total++
		for i, c := range Classes {
			if c.match(in) {
				counts[i].N++
				break
			}
		}
	}
	return counts, total
}

// CountOf is the number of k's instructions in the class named name (0 when no class has it).
func CountOf(k Kernel, name string) int {
	counts, _ := Counts(k)
	for _, c := range counts {
		if c.Class.Name == name {
			return c.N
		}
	}
	return 0
}

// Has reports whether k holds an instruction (that can execute) whose opcode starts with prefix:
// Has(k, "LDG.E.128").
func Has(k Kernel, prefix string) bool {
	for _, in := range k.Instructions {
		if !in.Never() && (in.Op == prefix || strings.HasPrefix(in.Op, prefix+".")) {
			return true
		}
	}
	return false
}

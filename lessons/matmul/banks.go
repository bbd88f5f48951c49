package matmul

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/diagram"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Shared memory has 32 banks of 4-byte words; a wavefront serves at most one word per bank (every
// lane that reads the same word gets it by broadcast). A warp's access therefore takes as many
// wavefronts as the most distinct words any one bank holds (diagram.BankConflict, which also draws
// the bank diagram of the lesson). Wavefronts counts them; with no conflict an access takes
// ceil(distinct words / 32) wavefronts.

// Wavefronts is the number of wavefronts of one warp access in which lane l touches width
// consecutive 4-byte words from word address words[l]; ideal is the count without bank conflicts.
func Wavefronts(words []int, width int) (got, ideal int) {
	var all []int
	distinct := map[int]bool{}
	for _, w0 := range words {
		for w := w0; w < w0+width; w++ {
			all = append(all, w)
			distinct[w] = true
		}
	}
	return diagram.BankConflict(all), (len(distinct) + 31) / 32
}

// Access is one shared-memory access of a step's kernel: the word address each lane of warp 0
// touches, width words each.
type Access struct {
	Step, What string
	Width      int
	Word       func(lane int) int
}

// Accesses are the shared-memory accesses the lesson analyses: the inner-loop loads and the tile
// stores of steps 5 to 8, with the layouts of their files (index expressions copied from them).
var Accesses = []Access{
	{"5 blocktile 2D", "A tile load As[(trow*8+i)*8 + k] (i = k = 0)", 1,
		func(l int) int { return (l / 16 * 8) * 8 }},
	{"5 blocktile 2D", "B tile load Bs[k*128 + tcol*8 .. +3] (a float4)", 4,
		func(l int) int { return l % 16 * 8 }},
	{"6 vectorized, no padding", "A tile store As[(a_c+0)*128 + a_r] (transposed)", 1,
		func(l int) int { return 4*(l%2)*128 + l/2 }},
	{"6 vectorized", "A tile store As[(a_c+0)*132 + a_r] (transposed, padded)", 1,
		func(l int) int { return 4*(l%2)*132 + l/2 }},
	{"6 vectorized", "A tile load As[k*132 + trow*8 .. +3] (a float4)", 4,
		func(l int) int { return l / 16 * 8 }},
	{"6 vectorized", "B tile load Bs[k*128 + tcol*8 .. +3] (a float4)", 4,
		func(l int) int { return l % 16 * 8 }},
	{"7, rows not swizzled", "A tile load As[(wm+lm+8i)*32 + kc .. +3] (a float4)", 4,
		func(l int) int { return (l & 7) * 32 }},
	{"7 warp tile", "A tile load As[(wm+lm+8i)*32 + 4*((kc/4) ^ key) .. +3] (a float4, swizzled)", 4,
		func(l int) int { return (l&7)*32 + 4*(l&7) }},
	{"7 warp tile", "B tile load Bs[kk*128 + wn + 16j + 4ln .. +3] (a float4)", 4,
		func(l int) int { return 4 * (l >> 3) }},
	{"8 tensor core tf32", "B fragment Bs[(ks+t)*136 + wn + 8j + g]", 1,
		func(l int) int { return (l&3)*136 + l>>2 }},
	{"8, rows of 128 words", "B fragment Bs[(ks+t)*128 + wn + 8j + g] (no padding)", 1,
		func(l int) int { return (l&3)*128 + l>>2 }},
}

// BankTable counts the wavefronts of every access in Accesses: the bank conflicts shown and removed.
func BankTable() show.Table {
	t := show.Table{Title: "Shared-memory bank conflicts of the inner loops and tile stores (one warp, counted from the index expressions)",
		Header: []string{"step", "access", "bytes per lane", "wavefronts", "without conflicts", "conflict"}}
	for _, a := range Accesses {
		words := make([]int, 32)
		for l := range words {
			words[l] = a.Word(l)
		}
		got, ideal := Wavefronts(words, a.Width)
		verdict := "none"
		if got > ideal {
			verdict = fmt.Sprintf("%d-way", got/ideal)
		}
		t.Rows = append(t.Rows, []string{a.Step, a.What, fmt.Sprint(4 * a.Width), fmt.Sprint(got), fmt.Sprint(ideal), verdict})
	}
	t.Caption = "32 banks of 4 bytes; lanes reading the same word share it (broadcast). A wavefront serves one word per bank, so an access takes as many wavefronts as the busiest bank has distinct words. " +
		"Step 6's transposed A tile removes step 5's 2-way conflict on A loads, and its 4-word padding removes the conflict its own transposed stores would have; its B loads keep a 2-way conflict that step 7's warp layout removes. " +
		"Step 7 keeps A's rows as they are, 32 words each, so the 8 rows a warp reads would share 4 banks (8-way); it stores a row's 16-byte chunk c at chunk c XOR (row mod 8), which spreads them over all 32. " +
		"Step 8 pads its B rows to 136 words for the same reason."
	return t
}

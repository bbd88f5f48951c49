package diagram

import (
	"fmt"
	"math"
	"strings"
)

// Figure is one diagram: its file name (without .svg), the id of the markdown cell of its notebook
// that explains the idea (the diagram's cell follows it), a one-line description used as the
// image's alt text, and the function that draws it.
type Figure struct {
	Name, After, Alt string
	Draw             func() ([]byte, error)
}

// All is every diagram of the notebooks, in notebook order. Each file is named after its notebook's
// number and lies in notebooks/figures/.
func All() []Figure {
	return []Figure{
		{"00_coalescing", "846017ab", "A warp's 32 addresses and the 32-byte sectors and 128-byte lines they touch, for contiguous floats, floats two apart and float4", Coalescing},
		{"01_rwkv_triangle", "3aaaee07", "The RWKV time-mix triangle: output t sums over inputs u up to t, each through filter tap (T-1)-(t-u)", RWKVTriangle},
		{"01_rwkv_balanced", "4431b6dd", "The balanced triangle: thread q computes outputs q and T-1-q, so every thread does T+1 products", RWKVBalanced},
		{"02_packs", "11af73cb", "The packed template in half: a warp's load of one half per lane against one 16-byte pack of 8 halves per lane, the pack's four __hmul2, and the grid-stride loop and tail over the threads", Packs},
		{"03_warp_tiles", "m03-23", "Step 7's tiles: a 128 x 128 block tile of eight 64 x 32 warp tiles, and the warp's 8 x 4 grid of lanes", WarpTiles},
		{"03_bank_swizzle", "m03-23", "Shared-memory banks hit by 8 lanes reading chunk 1 of 8 rows: eight passes unswizzled, one with the XOR swizzle", BankSwizzle},
		{"03_mma_fragments", "m03-25", "Which lane and register hold each element of A, B and C in mma.sync.m16n8k8 with TF32 inputs", MmaFragments},
		{"04_online_softmax", "336de7b0", "Two partial (max, sum) pairs of a row merged into the pair of the whole row", OnlineSoftmax},
		{"04_cluster_dsmem", "1360a6ac", "A cluster of four blocks splitting a row: each publishes its pair in shared memory and reads the others' through distributed shared memory", ClusterDSMEM},
		{"04b_welford_chan", "00275ae6", "Two parts of a sample, each with its (count, mean, M2) triple, merged by Chan's formula into the triple of the whole sample", WelfordChan},
		{"05_im2col", "c03", "The implicit GEMM's gather: the input pixels that row p and column q of the im2col matrix read for a 3 x 3 filter", Im2col},
		{"05_pool_windows", "c23", "Step 7's pool tile: 4 x 6 max-pool windows of 3 x 3 at stride 2 over a 9 x 13 conv region, and how many windows share each pixel", PoolWindows},
		{"06_giou_boxes", "c00", "A prediction p and its target t, their intersection I, union U and smallest enclosing box E, with GIoU = I/U − (E − U)/E computed for overlapping boxes and for a miss; below, the first images of the padded batch (valid slots against padding) and what each step walks", GIoUBoxes},
		{"07_trilinear", "c00", "The trilinear cell: a point inside and the weights of its eight corners", Trilinear},
		{"08_tma_ring", "m08-16", "A ring of four stages as a timeline: TMA loads, full barriers, wgmma on each tile and the stage released for the next load", TMARing},
		{"08_space_to_depth", "2b6af00e", "Space-to-depth at stride 2: each 2 x 2 block of a channel's pixels becomes one pixel of four channels, and a 3 x 3 filter at stride 2 becomes a 2 x 2 filter at stride 1 over them, its taps past the 3 x 3 zero", SpaceToDepthFig},
		{"08_wgmma_accumulator", "m08-14", "Which thread and register hold each element of wgmma m64nNk16's 64 x N float32 accumulator", WgmmaAccumulator},
		{"09_guards", "ee2dc40b", "The path of a reader's kernel from the cell to the GPU: NVRTC, ptxas for the GPU's architecture, the load and launch checks, the run under its deadline, a fault, the check against the float64 reference, and Sanitize's compute-sanitizer tools, each with the mistakes of this notebook it catches", Mistakes09},
	}
}

// cell draws a grid cell at (x, y) of size w x h with an optional centred label.
func (c *Canvas) cell(x, y, w, h float64, fill, label string, size float64, color string) {
	c.Rect(x, y, w, h, fill, "#ffffff")
	if label != "" {
		c.Text(x+w/2, y+h/2, label, size, Middle, color)
	}
}

// legend draws a coloured square and its text.
func (c *Canvas) legend(x, y float64, fill, s string) {
	c.Rect(x, y-6, 12, 12, fill, grid)
	c.Text(x+18, y, s, labelSz, Start, ink)
}

// Coalescing draws three access patterns of a warp: each lane's address, the 32-byte sectors and
// 128-byte lines touched, counted by Coalesce.
func Coalescing() ([]byte, error) {
	type pattern struct {
		name         string
		stride, size int
	}
	ps := []pattern{{"a[i]: 32 consecutive floats", 1, 4}, {"a[2*i]: floats two apart", 2, 4}, {"((float4*)a)[i]: 16 bytes per lane", 1, 16}}
	const x0, bw, laneW, rowH = 70.0, 1.5, 24.0, 150.0
	c := NewCanvas(x0+512*bw+30, 60+rowH*float64(len(ps))+20)
	c.Title("A warp's 32 addresses and the memory transactions they become")
	for k, p := range ps {
		y := 56 + rowH*float64(k)
		addr := StridedAddrs(p.stride, p.size)
		tr := Coalesce(addr, p.size)
		c.Bold(marginPx, y, p.name, labelSz+1, Start, ink)
		c.Text(marginPx, y+18, fmt.Sprintf("%s of 32 B, %s of 128 B; %d of the %d bytes fetched are used (%d%%)",
			plural(tr.Sectors, "sector"), plural(tr.Lines, "line"), tr.Useful, tr.Moved, 100*tr.Useful/tr.Moved), labelSz, Start, palette[3])
		c.warpAccess(x0, y+36, bw, laneW, addr, p.size)
	}
	c.legend(x0, c.h-14, light[1], "a sector the warp touches")
	c.legend(x0+230, c.h-14, palette[1], "bytes a lane asked for")
	return c.Bytes(), nil
}

// warpAccess draws a warp's lanes in a row at (x0, y) (laneW pixels each), the first 512 bytes of
// memory 64 pixels below (bw pixels a byte) with the 32-byte sectors it touches shaded and the
// 128-byte lines marked, and a line from each lane to the size bytes at its address.
func (c *Canvas) warpAccess(x0, y, bw, laneW float64, addr []int, size int) {
	ly, my := y, y+64
	c.Text(x0-8, ly+8, "lane", smallSz, End, ink)
	c.Text(x0-8, my+9, "bytes", smallSz, End, ink)
	for i := 0; i < WarpSize; i++ {
		lx := x0 + float64(i)*laneW
		c.cell(lx, ly, laneW-2, 16, light[0], fmt.Sprint(i), tinySz, ink)
		ax := x0 + (float64(addr[i])+float64(size)/2)*bw
		c.Line(lx+(laneW-2)/2, ly+16, ax, my, palette[0], 0.8)
	}
	touched := map[int]bool{}
	for _, a := range addr {
		for b := a; b < a+size; b++ {
			touched[b/32] = true
		}
	}
	for s := 0; s < 512/32; s++ {
		fill := "#f4f4f4"
		if touched[s] {
			fill = light[1]
		}
		c.Rect(x0+float64(s*32)*bw, my, 32*bw, 18, fill, grid)
	}
	for _, a := range addr {
		c.Rect(x0+float64(a)*bw, my+5, float64(size)*bw, 8, palette[1], "")
	}
	for l := 0; l <= 4; l++ {
		lx := x0 + float64(l*128)*bw
		c.Line(lx, my-4, lx, my+22, ink, 2)
		if l < 4 {
			c.Text(lx+64*bw, my+32, fmt.Sprintf("line %d (bytes %d-%d)", l, l*128, l*128+127), smallSz, Middle, ink)
		}
	}
}

// rwkvT is the sequence length the triangle diagrams draw.
const rwkvT = 12

// RWKVTriangle draws the time-mix's work: row t, column u holds the product w[(T-1)-(t-u)]·k[u]
// when u <= t; one row is highlighted as its window.
func RWKVTriangle() ([]byte, error) {
	const T, sz, x0, y0, hl = rwkvT, 30.0, 90.0, 78.0, 7
	c := NewCanvas(x0+T*sz+330, y0+T*sz+60)
	c.Title(fmt.Sprintf("out[t] = ε + Σ_{u ≤ t} w[(T-1)-(t-u)]·k[u]: T(T+1)/2 = %d products for T = %d", T*(T+1)/2, T))
	c.Text(x0+T*sz/2, y0-26, "input step u (k[u])", labelSz, Middle, ink)
	c.Text(x0-50, y0+T*sz/2, "output t", labelSz, Middle, ink)
	total := 0
	for t := 0; t < T; t++ {
		c.Text(x0-8, y0+float64(t)*sz+sz/2, fmt.Sprint(t), smallSz, End, ink)
		c.Text(x0+float64(t)*sz+sz/2, y0-10, fmt.Sprint(t), smallSz, Middle, ink)
		n := 0
		for u := 0; u < T; u++ {
			x, y := x0+float64(u)*sz, y0+float64(t)*sz
			if u > t {
				c.cell(x, y, sz, sz, "#f4f4f4", "", 0, "")
				continue
			}
			n++
			fill, color := light[0], ink
			if t == hl {
				fill, color = palette[0], "#ffffff"
			}
			c.cell(x, y, sz, sz, fill, fmt.Sprintf("w%d", (T-1)-(t-u)), tinySz+1, color)
		}
		total += n
		c.Text(x0+T*sz+10, y0+float64(t)*sz+sz/2, plural(n, "product"), smallSz, Start, ink)
	}
	c.Text(x0, y0+T*sz+20, fmt.Sprintf("Row %d, highlighted, is the window of output %d: inputs 0..%d through taps w%d..w%d.", hl, hl, hl, (T-1)-hl, T-1),
		labelSz, Start, ink)
	c.Text(x0, y0+T*sz+38, fmt.Sprintf("Each cell is one multiply-add (%d in all); the grey half is never computed.", total), labelSz, Start, ink)
	return c.Bytes(), nil
}

// RWKVBalanced draws the triangle with thread q owning rows q and T-1-q.
func RWKVBalanced() ([]byte, error) {
	const T, sz, x0, y0 = rwkvT, 30.0, 90.0, 60.0
	c := NewCanvas(x0+T*sz+330, y0+T*sz+50)
	c.Title(fmt.Sprintf("Balanced: thread q computes outputs q and T-1-q, %d products each", T+1))
	for t := 0; t < T; t++ {
		q := min(t, T-1-t)
		c.Text(x0-8, y0+float64(t)*sz+sz/2, fmt.Sprintf("t = %d", t), smallSz, End, ink)
		for u := 0; u < T; u++ {
			x, y := x0+float64(u)*sz, y0+float64(t)*sz
			if u > t {
				c.cell(x, y, sz, sz, "#f4f4f4", "", 0, "")
				continue
			}
			c.cell(x, y, sz, sz, palette[q%len(palette)], "", 0, "")
		}
		c.Text(x0+T*sz+10, y0+float64(t)*sz+sz/2, fmt.Sprintf("thread %d: %d + %d = %d", q, q+1, T-q, q+1+T-q), smallSz, Start, ink)
	}
	c.Text(x0, y0+T*sz+20, fmt.Sprintf("%d threads instead of %d; one colour per thread. Unbalanced, thread t does t+1 products (1 to %d).", T/2, T, T),
		labelSz, Start, ink)
	return c.Bytes(), nil
}

// WarpTiles draws step 7's block tile, warp tiles and the lanes of warp 0.
func WarpTiles() ([]byte, error) {
	const bs, x0, y0 = 2.0, 20.0, 70.0 // block tile: 2 px an element
	const ws, wx = 7.0, 330.0          // warp tile: 7 px an element
	const gx = wx + 32*ws + 60         // lane grid
	c := NewCanvas(gx+4*46+30, y0+64*ws+70)
	c.Title("Step 7: block tile, warp tiles and the 8 x 4 grid of lanes")
	c.Text(x0, y0-14, "block tile 128 x 128 (256 threads)", labelSz, Start, ink)
	for w := 0; w < 8; w++ {
		wm, wn := w/4, w%4
		fill := "#f4f4f4"
		if w == 0 {
			fill = light[0]
		}
		x, y := x0+float64(wn*32)*bs, y0+float64(wm*64)*bs
		c.Rect(x, y, 32*bs, 64*bs, fill, ink)
		c.Text(x+16*bs, y+32*bs, fmt.Sprintf("warp %d", w), labelSz, Middle, ink)
	}
	c.Text(x0, y0+128*bs+16, "8 warps: 2 along M x 4 along N,", smallSz, Start, ink)
	c.Text(x0, y0+128*bs+30, "each a 64 x 32 warp tile", smallSz, Start, ink)
	c.Line(x0+32*bs, y0, wx, y0, grid, 1)
	c.Line(x0+32*bs, y0+64*bs, wx, y0+64*ws, grid, 1)
	c.Text(wx, y0-30, "warp 0's 64 x 32 tile, coloured by the lane", labelSz, Start, ink)
	c.Text(wx, y0-14, "that owns each output (the grid on the right)", labelSz, Start, ink)
	own := 0
	for r := 0; r < 64; r++ {
		for col := 0; col < 32; col++ {
			lane := WarpTileLane(r, col)
			lm, ln := lane&7, lane>>3
			fill := light[ln]
			if lm%2 == 1 {
				fill = palette[ln]
			}
			c.Rect(wx+float64(col)*ws, y0+float64(r)*ws, ws, ws, fill, "")
			if lane == 0 {
				own++
				c.Circle(wx+float64(col)*ws+ws/2, y0+float64(r)*ws+ws/2, 2.2, ink, "")
			}
		}
	}
	for r := 0; r <= 64; r += 8 {
		c.Line(wx, y0+float64(r)*ws, wx+32*ws, y0+float64(r)*ws, grid, 0.6)
	}
	c.Line(wx+16*ws, y0, wx+16*ws, y0+64*ws, ink, 1)
	c.Text(wx, y0+64*ws+16, fmt.Sprintf("● lane 0's %d outputs: rows 0, 8, .., 56; columns 0-3 and 16-19", own), smallSz, Start, ink)
	c.Text(gx, y0+8*28+30, "lane = lm + 8·ln", labelSz, Start, ink)
	for lm := 0; lm < 8; lm++ {
		for ln := 0; ln < 4; ln++ {
			fill, color := light[ln], ink
			if lm%2 == 1 {
				fill, color = palette[ln], "#ffffff"
			}
			c.cell(gx+float64(ln)*46, y0+float64(lm)*28, 46, 28, fill, fmt.Sprint(lm+8*ln), labelSz, color)
		}
		c.Text(gx-6, y0+float64(lm)*28+14, fmt.Sprintf("lm %d", lm), smallSz, End, ink)
	}
	for ln := 0; ln < 4; ln++ {
		c.Text(gx+float64(ln)*46+23, y0+8*28+12, fmt.Sprintf("ln %d", ln), smallSz, Middle, ink)
	}
	lines := []string{"Lane (lm, ln) owns rows lm + 8i", "and columns 4ln..4ln+3 and", "16+4ln..16+4ln+3: 8 x 8 outputs.", "A warp's A loads touch 8 rows,", "its B loads 4 float4 of a row."}
	for i, s := range lines {
		c.Text(gx-20, y0+8*28+56+float64(i)*16, s, smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

// BankSwizzle draws the banks that 8 lanes hit when each reads 16-byte chunk 1 of one of 8 rows
// of 32 words, unswizzled and swizzled, with the passes counted by BankConflict.
func BankSwizzle() ([]byte, error) {
	const chunk, sz, x0 = 1, 20.0, 70.0
	const panelH = 8*sz + 110
	c := NewCanvas(x0+32*sz+40, 50+2*panelH)
	c.Title(fmt.Sprintf("8 lanes read float4 chunk %d of rows 0..7 (rows of 32 words: bank = column)", chunk))
	for k, swz := range []bool{false, true} {
		y0 := 70 + float64(k)*panelH
		var words []int
		hit := map[int]int{}
		for r := 0; r < 8; r++ {
			ws := ChunkWords(r, chunk, 32, swz)
			words = append(words, ws...)
			for _, w := range ws {
				hit[w] = r + 1
			}
		}
		passes := BankConflict(words)
		title := fmt.Sprintf("As[r][4c..4c+3], no swizzle: %d passes (a %d-way conflict)", passes, passes)
		if swz {
			title = fmt.Sprintf("chunk c of row r stored at chunk c XOR r: %d pass (no conflict)", passes)
		}
		c.Bold(marginPx, y0-22, title, labelSz+1, Start, palette[3])
		for b := 0; b < 32; b += 4 {
			c.Text(x0+float64(b)*sz+2*sz, y0-6, fmt.Sprintf("banks %d-%d", b, b+3), tinySz, Middle, ink)
		}
		perBank := map[int]int{}
		for r := 0; r < 8; r++ {
			c.Text(x0-8, y0+float64(r)*sz+sz/2, fmt.Sprintf("row %d", r), smallSz, End, ink)
			for b := 0; b < 32; b++ {
				w := r*32 + b
				if lane, ok := hit[w]; ok {
					perBank[b]++
					c.cell(x0+float64(b)*sz, y0+float64(r)*sz, sz, sz, palette[(lane-1)%len(palette)], fmt.Sprint(lane-1), tinySz, "#ffffff")
				} else {
					c.cell(x0+float64(b)*sz, y0+float64(r)*sz, sz, sz, "#f0f0f0", "", 0, "")
				}
			}
		}
		for b := 0; b <= 32; b += 4 {
			c.Line(x0+float64(b)*sz, y0, x0+float64(b)*sz, y0+8*sz, ink, 1)
		}
		yb := y0 + 8*sz + 8
		c.Text(x0-8, yb+8, "words", smallSz, End, ink)
		for b := 0; b < 32; b++ {
			fill := "#ffffff"
			if perBank[b] > 1 {
				fill = light[3]
			}
			lbl := ""
			if perBank[b] > 0 {
				lbl = fmt.Sprint(perBank[b])
			}
			c.cell(x0+float64(b)*sz, yb, sz, 16, fill, lbl, smallSz, ink)
		}
		c.Text(x0, yb+28, "Cells: the lane (= row) that reads the word. Bottom: distinct words each bank must serve; the largest is the number of passes.", smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

// MmaFragments draws the lane map of mma.sync.m16n8k8 with TF32 inputs: A 16 x 8, B 8 x 8, C 16 x 8.
func MmaFragments() ([]byte, error) {
	const cw, ch, gap, y0 = 40.0, 20.0, 50.0, 80.0
	type mat struct {
		name       string
		rows, regs int
		reg        string
		f          func(lane, i int) Fragment
	}
	ms := []mat{{"A (16 x 8, row-major): a0..a3", 16, 4, "a", MmaA}, {"B (8 x 8, K x N): b0, b1", 8, 2, "b", MmaB}, {"C, D (16 x 8 float32): c0..c3", 16, 4, "c", MmaC}}
	c := NewCanvas(40+3*(8*cw+gap), y0+16*ch+70)
	c.Title("mma.sync.m16n8k8 with TF32 inputs: which lane and register hold each element")
	for k, m := range ms {
		x0 := 40 + float64(k)*(8*cw+gap)
		c.Bold(x0, y0-34, m.name, labelSz, Start, ink)
		at := map[Fragment]string{}
		group := map[Fragment]int{}
		for lane := 0; lane < 32; lane++ {
			for i := 0; i < m.regs; i++ {
				e := m.f(lane, i)
				at[e] = fmt.Sprintf("L%d %s%d", lane, m.reg, i)
				group[e] = lane >> 2
			}
		}
		for col := 0; col < 8; col++ {
			c.Text(x0+float64(col)*cw+cw/2, y0-10, fmt.Sprint(col), smallSz, Middle, ink)
		}
		for r := 0; r < m.rows; r++ {
			c.Text(x0-6, y0+float64(r)*ch+ch/2, fmt.Sprint(r), smallSz, End, ink)
			for col := 0; col < 8; col++ {
				e := Fragment{r, col}
				c.cell(x0+float64(col)*cw, y0+float64(r)*ch, cw, ch, light[group[e]], at[e], tinySz+1, ink)
			}
		}
	}
	c.Text(40, y0+16*ch+20, "Lx ri: lane x, register i. groupID = lane >> 2 (the colour), threadID_in_group = lane % 4. From the PTX ISA's fragment layouts for .tf32;", smallSz, Start, ink)
	c.Text(40, y0+16*ch+36, "each map covers its tile exactly once. A warp of 32 lanes holds all of A, B and C between them.", smallSz, Start, ink)
	return c.Bytes(), nil
}

// OnlineSoftmax draws the merge of two partial (max, sum) pairs of an example row.
func OnlineSoftmax() ([]byte, error) {
	xs := []float64{1.0, 3.0, 0.5, 2.0, 4.0, 1.5, 2.5, 0.8}
	half := len(xs) / 2
	a, b := Partial(xs[:half]), Partial(xs[half:])
	m := Merge(a, b)
	whole := Partial(xs)
	const x0, y0, bw, hs = 60.0, 60.0, 48.0, 30.0
	c := NewCanvas(820, 430)
	c.Title("The online softmax: two partial (max, sum) pairs merge into the row's")
	base := y0 + 5*hs
	c.Line(x0-10, base, x0+float64(len(xs))*bw+60, base, ink, 1)
	for i, x := range xs {
		part := 0
		xx := x0 + float64(i)*bw
		if i >= half {
			part = 1
			xx += 40
		}
		c.Rect(xx+6, base-x*hs, bw-12, x*hs, palette[part], "")
		c.Text(xx+bw/2, base+12, fmt.Sprintf("%.1f", x), smallSz, Middle, ink)
	}
	c.Text(x0-14, base+12, "x", smallSz, End, ink)
	boxes := []struct {
		p    Pair
		name string
		x    float64
	}{{a, "1", x0}, {b, "2", x0 + float64(half)*bw + 40}}
	for k, bx := range boxes {
		y := base + 34
		c.Rect(bx.x, y, float64(half)*bw, 52, light[k], palette[k])
		c.Text(bx.x+8, y+16, fmt.Sprintf("m%s = max = %.2f", bx.name, bx.p.M), labelSz, Start, ink)
		c.Text(bx.x+8, y+36, fmt.Sprintf("s%s = Σ exp(x − m%s) = %.4f", bx.name, bx.name, bx.p.S), labelSz, Start, ink)
		c.Arrow(bx.x+float64(half)*bw/2, y+52, 330, base+124, ink)
	}
	y := base + 126
	c.Rect(60, y, 640, 72, "#f4f4f4", ink)
	c.Text(70, y+18, fmt.Sprintf("m = max(m1, m2) = %.2f", m.M), labelSz, Start, ink)
	c.Text(70, y+38, fmt.Sprintf("s = s1·exp(m1 − m) + s2·exp(m2 − m) = %.4f·%.4f + %.4f·%.4f = %.4f",
		a.S, math.Exp(a.M-m.M), b.S, math.Exp(b.M-m.M), m.S), labelSz, Start, ink)
	c.Text(70, y+58, fmt.Sprintf("the whole row read at once: m = %.2f, s = %.4f (the same pair)", whole.M, whole.S), labelSz, Start, palette[2])
	c.Text(720, base-4*hs, "Each part keeps only its pair;", smallSz, End, ink)
	c.Text(720, base-4*hs+15, "a larger maximum rescales", smallSz, End, ink)
	c.Text(720, base-4*hs+30, "the other part's sum.", smallSz, End, ink)
	return c.Bytes(), nil
}

// WelfordChan draws layer norm step 3's statistics: two parts of a sample, each with its Welford
// triple (count, mean, sum of squared deviations from that mean), merged by Chan's formula into the
// triple of the whole sample.
func WelfordChan() ([]byte, error) {
	xs := []float64{1.0, 3.0, 0.5, 2.0, 4.0, 1.5, 2.5, 0.8}
	half := len(xs) / 2
	a, b := Stats(xs[:half]), Stats(xs[half:])
	m := Chan(a, b)
	whole := Stats(xs)
	const x0, y0, bw, hs = 60.0, 60.0, 48.0, 30.0
	c := NewCanvas(820, 450)
	c.Title("Welford and Chan: two partial (count, mean, M2) triples merge into the sample's")
	base := y0 + 5*hs
	c.Line(x0-10, base, x0+float64(len(xs))*bw+60, base, ink, 1)
	parts := []struct {
		t    Triple
		name string
		x    float64
	}{{a, "a", x0}, {b, "b", x0 + float64(half)*bw + 40}}
	for i, x := range xs {
		part := i / half
		xx := parts[part].x + float64(i%half)*bw
		c.Rect(xx+6, base-x*hs, bw-12, x*hs, light[part], palette[part])
		c.Line(xx+bw/2, base-x*hs, xx+bw/2, base-parts[part].t.Mean*hs, palette[part], 1.5)
		c.Text(xx+bw/2, base+12, fmt.Sprintf("%.1f", x), smallSz, Middle, ink)
	}
	c.Text(x0-14, base+12, "x", smallSz, End, ink)
	for k, p := range parts {
		y := base - p.t.Mean*hs
		c.Line(p.x, y, p.x+float64(half)*bw, y, palette[k], 2)
		c.Text(p.x+float64(half)*bw+4, y+4, "mean "+p.name, smallSz, Start, palette[k])
		by := base + 34
		c.Rect(p.x, by, float64(half)*bw, 72, light[k], palette[k])
		c.Text(p.x+8, by+16, fmt.Sprintf("n%s = %.0f", p.name, p.t.N), labelSz, Start, ink)
		c.Text(p.x+8, by+36, fmt.Sprintf("mean%s = %.3f", p.name, p.t.Mean), labelSz, Start, ink)
		c.Text(p.x+8, by+56, fmt.Sprintf("M2%s = %.3f", p.name, p.t.M2), labelSz, Start, ink)
		c.Arrow(p.x+float64(half)*bw/2, by+72, 330, base+144, ink)
	}
	d := b.Mean - a.Mean
	y := base + 146
	c.Rect(60, y, 700, 92, "#f4f4f4", ink)
	c.Text(70, y+18, fmt.Sprintf("n = na + nb = %.0f,   d = meanb − meana = %.3f", m.N, d), labelSz, Start, ink)
	c.Text(70, y+38, fmt.Sprintf("mean = meana + d·nb/n = %.4f", m.Mean), labelSz, Start, ink)
	c.Text(70, y+58, fmt.Sprintf("M2 = M2a + M2b + d²·na·nb/n = %.3f + %.3f + %.3f = %.3f", a.M2, b.M2, d*d*a.N*b.N/m.N, m.M2), labelSz, Start, ink)
	c.Text(70, y+78, fmt.Sprintf("the whole sample at once: mean = %.4f, M2 = %.3f (the same triple); variance = M2 / n", whole.Mean, whole.M2), labelSz, Start, palette[2])
	c.Text(760, base-4*hs, "Each part keeps only its triple:", smallSz, End, ink)
	c.Text(760, base-4*hs+15, "M2 = Σ (x − mean)² over the part.", smallSz, End, ink)
	c.Text(760, base-4*hs+30, "Only deviations from a mean", smallSz, End, ink)
	c.Text(760, base-4*hs+45, "are squared: nothing large cancels.", smallSz, End, ink)
	return c.Bytes(), nil
}

// ClusterDSMEM draws a cluster of four blocks splitting a row and reading each other's pairs.
func ClusterDSMEM() ([]byte, error) {
	const n, bw, gap, x0, y0 = 4, 170.0, 30.0, 30.0, 70.0
	c := NewCanvas(x0+n*(bw+gap)+10, 500)
	c.Title(fmt.Sprintf("A cluster of %d blocks holds one row: pairs through distributed shared memory", n))
	c.Text(x0, y0-10, "one row of x, split into the blocks' parts", labelSz, Start, ink)
	for k := 0; k < n; k++ {
		x := x0 + float64(k)*(bw+gap)
		c.Rect(x, y0, bw+gap-4, 22, palette[k], "")
		c.Text(x+(bw+gap)/2, y0+11, fmt.Sprintf("part %d", k), labelSz, Middle, "#ffffff")
		c.Arrow(x+bw/2, y0+24, x+bw/2, y0+58, ink)
		by := y0 + 60.0
		c.Rect(x, by, bw, 230, "#f8f8f8", ink)
		c.Bold(x+bw/2, by+16, fmt.Sprintf("block %d (its own SM)", k), labelSz, Middle, ink)
		c.Rect(x+10, by+32, bw-20, 40, light[k], palette[k])
		c.Text(x+bw/2, by+44, "registers:", smallSz, Middle, ink)
		c.Text(x+bw/2, by+60, fmt.Sprintf("part %d, read once", k), smallSz, Middle, ink)
		c.Rect(x+10, by+150, bw-20, 44, light[k], palette[k])
		c.Text(x+bw/2, by+162, "shared memory:", smallSz, Middle, ink)
		c.Text(x+bw/2, by+180, fmt.Sprintf("(m%d, s%d)", k, k), labelSz, Middle, ink)
		c.Arrow(x+bw/2, by+74, x+bw/2, by+148, ink)
		c.Text(x+bw/2+4, by+110, "publish", smallSz, Start, ink)
	}
	// Block 0 reads the other blocks' pairs.
	sy := y0 + 60 + 194
	for k := 1; k < n; k++ {
		x := x0 + float64(k)*(bw+gap) + bw/2
		ex := x0 + bw/2 + 20*float64(k)
		cy := sy + 70 + 16*float64(k)
		fmt.Fprintf(&c.b, `<path d="M %s %s C %s %s %s %s %s %s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n",
			num(x), num(sy), num(x), num(cy), num(ex), num(cy), num(ex), num(sy+2), palette[3])
		c.Polygon([]float64{ex, sy + 1, ex - 4, sy + 10, ex + 4, sy + 10}, palette[3], "")
	}
	c.Text(x0+bw+gap/2, sy+100, "ld.shared::cluster", smallSz, Start, palette[3])
	c.Text(x0, sy+128, fmt.Sprintf("After a cluster barrier, block 0 reads the pairs of blocks 1..%d from their shared memory (dashed); every block does the same:", n-1), smallSz, Start, ink)
	c.Text(x0, sy+144, fmt.Sprintf("%d x %d = %d remote reads of 8 bytes. Each block merges the %d pairs and writes its part of y from its registers.", n, n-1, n*(n-1), n), smallSz, Start, ink)
	return c.Bytes(), nil
}

// Im2col draws the implicit GEMM's gather for a 5 x 5 input, a 3 x 3 filter and padding 1.
func Im2col() ([]byte, error) {
	g := ConvGeom{H: 5, W: 5, R: 3, Stride: 1, Pad: 1}
	OH, OW := g.Out()
	const ph, pw = 0, 3 // the highlighted output pixel
	const q = 0         // the highlighted column (tap)
	p := ph*OW + pw
	const s, x0, y0 = 34.0, 40.0, 80.0
	const mx, cw, ch = 360.0, 34.0, 15.0
	c := NewCanvas(mx+9*cw+190, y0+float64(OH*OW)*ch+60)
	c.Title("im2col: row p of the implicit matrix is the 3 x 3 window of output pixel p")
	c.Text(x0, y0-24, "input 5 x 5 (pixel numbers), padded by 1", labelSz, Start, ink)
	win := map[[2]int]bool{}
	colPix := map[[2]int]bool{}
	for r := 0; r < g.R; r++ {
		for t := 0; t < g.R; t++ {
			ih, iw, _ := g.Tap(ph, pw, r, t)
			win[[2]int{ih, iw}] = true
		}
	}
	for oh := 0; oh < OH; oh++ {
		for ow := 0; ow < OW; ow++ {
			if ih, iw, in := g.Tap(oh, ow, q/g.R, q%g.R); in {
				colPix[[2]int{ih, iw}] = true
			}
		}
	}
	for ih := -1; ih <= g.H; ih++ {
		for iw := -1; iw <= g.W; iw++ {
			x, y := x0+float64(iw+1)*s, y0+float64(ih+1)*s
			inside := ih >= 0 && ih < g.H && iw >= 0 && iw < g.W
			fill, lbl, color := "#e8e8e8", "0", grid
			if inside {
				fill, lbl, color = "#ffffff", fmt.Sprint(ih*g.W+iw), ink
				if colPix[[2]int{ih, iw}] {
					fill = light[2]
				}
			}
			if win[[2]int{ih, iw}] {
				fill, color = palette[0], "#ffffff"
			}
			c.Rect(x, y, s, s, fill, grid)
			c.Text(x+s/2, y+s/2, lbl, labelSz, Middle, color)
		}
	}
	c.Text(x0, y0+7*s+20, fmt.Sprintf("Blue: the window of output pixel p = %d (row %d, column %d);", p, ph, pw), smallSz, Start, ink)
	c.Text(x0, y0+7*s+36, "grey: padding, read as zero.", smallSz, Start, ink)
	c.Text(x0, y0+7*s+56, fmt.Sprintf("Green: the pixels of column q = %d (tap (0, 0)):", q), smallSz, Start, ink)
	c.Text(x0, y0+7*s+72, "the input shifted by the tap's offset.", smallSz, Start, ink)
	c.Text(mx, y0-40, fmt.Sprintf("im2col matrix: %d rows (output pixels) x %d columns (taps)", OH*OW, g.R*g.R), labelSz, Start, ink)
	for t := 0; t < g.R*g.R; t++ {
		c.Text(mx+float64(t)*cw+cw/2, y0-12, fmt.Sprintf("(%d,%d)", t/g.R, t%g.R), tinySz, Middle, ink)
	}
	pads := 0
	for row := 0; row < OH*OW; row++ {
		oh, ow := row/OW, row%OW
		c.Text(mx-6, y0+float64(row)*ch+ch/2, fmt.Sprintf("p %d", row), tinySz, End, ink)
		for t := 0; t < g.R*g.R; t++ {
			ih, iw, in := g.Tap(oh, ow, t/g.R, t%g.R)
			fill, lbl, color := "#e8e8e8", "0", grid
			if in {
				fill, lbl, color = "#ffffff", fmt.Sprint(ih*g.W+iw), ink
			} else {
				pads++
			}
			if t == q && in {
				fill = light[2]
			}
			if row == p {
				fill, color = palette[0], "#ffffff"
			}
			c.Rect(mx+float64(t)*cw, y0+float64(row)*ch, cw, ch, fill, "#ffffff")
			c.Text(mx+float64(t)*cw+cw/2, y0+float64(row)*ch+ch/2, lbl, tinySz+1, Middle, color)
		}
	}
	tx := mx + 9*cw + 16
	for i, l := range []string{
		"Entry (p, q) is the input pixel",
		"that tap q of output pixel p reads.",
		fmt.Sprintf("%d of the %d entries are padding.", pads, OH*OW*g.R*g.R),
		"Interior pixels appear 9 times:",
		"built explicitly, im2col copies",
		"the input about R² times. The",
		"implicit GEMM gathers a tile of",
		"rows into shared memory when",
		"the product needs it, and never",
		"writes the matrix."} {
		c.Text(tx, y0+float64(i)*17+8, l, smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

// PoolWindows draws step 7's pool tile: th x tw windows over the conv region they cover.
func PoolWindows() ([]byte, error) {
	const th, tw, size, stride = 4, 6, 3, 2
	H, W := PoolRegion(th, tw, size, stride)
	cover := PoolCover(th, tw, size, stride)
	const s, x0, y0 = 32.0, 50.0, 70.0
	c := NewCanvas(x0+float64(W)*s+360, y0+float64(H)*s+60)
	c.Title(fmt.Sprintf("%d x %d max-pool windows (%d x %d, stride %d) need a %d x %d conv region", th, tw, size, size, stride, H, W))
	count := map[int]int{}
	fills := map[int]string{1: "#ffffff", 2: light[0], 4: palette[0]}
	for i := 0; i < H; i++ {
		for j := 0; j < W; j++ {
			n := cover[i][j]
			count[n]++
			color := ink
			if n == 4 {
				color = "#ffffff"
			}
			c.cell(x0+float64(j)*s, y0+float64(i)*s, s, s, fills[n], fmt.Sprint(n), labelSz, color)
		}
	}
	for i := 0; i <= H; i++ {
		c.Line(x0, y0+float64(i)*s, x0+float64(W)*s, y0+float64(i)*s, faint, 1)
	}
	for j := 0; j <= W; j++ {
		c.Line(x0+float64(j)*s, y0, x0+float64(j)*s, y0+float64(H)*s, faint, 1)
	}
	for k, w := range [][2]int{{0, 0}, {0, 1}, {1, 1}} {
		x, y := x0+float64(w[1]*stride)*s, y0+float64(w[0]*stride)*s
		c.Frame(x+2+float64(k), y+2+float64(k), size*s-4-2*float64(k), size*s-4-2*float64(k), palette[k+1], 3)
	}
	tx := x0 + float64(W)*s + 20
	for i, l := range []string{
		"Each number: how many windows",
		"read the pixel. Three windows",
		"are outlined.",
		"",
		fmt.Sprintf("%d pixels are read by 1 window,", count[1]),
		fmt.Sprintf("%d by 2 and %d by 4.", count[2], count[4]),
		"",
		fmt.Sprintf("The region is (%d-1)·%d+%d by", th, stride, size),
		fmt.Sprintf("(%d-1)·%d+%d: %d x %d = %d pixels.", tw, stride, size, H, W, H*W),
		"A neighbouring tile computes",
		"the shared border row and",
		"column again."} {
		c.Text(tx, y0+8+float64(i)*18, l, labelSz, Start, ink)
	}
	return c.Bytes(), nil
}

// Trilinear draws the cell, a point inside it and its eight corners' weights.
func Trilinear() ([]byte, error) {
	u, v, w := 0.3, 0.6, 0.25
	ws := TrilinearWeights(u, v, w)
	proj := func(x, y, z float64) (float64, float64) { return 80 + 230*x + 130*z, 400 - 230*y - 110*z }
	c := NewCanvas(860, 450)
	c.Title("Trilinear interpolation: the point's weight on each corner k = 4i + 2j + l")
	corner := func(k int) (float64, float64) {
		return proj(float64(k>>2&1), float64(k>>1&1), float64(k&1))
	}
	for a := 0; a < 8; a++ {
		for b := a + 1; b < 8; b++ {
			if d := a ^ b; d == 1 || d == 2 || d == 4 {
				x1, y1 := corner(a)
				x2, y2 := corner(b)
				c.Line(x1, y1, x2, y2, grid, 1.5)
			}
		}
	}
	px, py := proj(u, v, w)
	// Guides from the point to the faces it splits.
	for _, g := range [][3]float64{{0, v, w}, {u, 0, w}, {u, v, 0}} {
		gx, gy := proj(g[0], g[1], g[2])
		c.Line(px, py, gx, gy, palette[3], 0.8)
	}
	total := 0.0
	for k := 0; k < 8; k++ {
		x, y := corner(k)
		c.Circle(x, y, 4+22*math.Sqrt(ws[k]), light[0], palette[0])
		c.Bold(x, y, fmt.Sprint(k), labelSz, Middle, ink)
		total += ws[k]
	}
	c.Circle(px, py, 5, palette[3], "")
	c.Text(px+8, py-10, "p", labelSz, Start, palette[3])
	ax, ay := proj(0.5, 0, 0)
	c.Text(ax, ay+16, "u →", labelSz, Middle, ink)
	ax, ay = proj(0, 0.5, 0)
	c.Text(ax-10, ay, "v ↑", labelSz, End, ink)
	ax, ay = proj(0, 0, 0.5)
	c.Text(ax+10, ay+8, "w ↗", labelSz, Start, ink)
	tx := 540.0
	c.Text(tx, 64, fmt.Sprintf("p at (u, v, w) = (%.2f, %.2f, %.2f)", u, v, w), labelSz, Start, ink)
	c.Text(tx, 84, "(u, v, w) = (point + 1) / 2", smallSz, Start, ink)
	names := func(k int) string {
		var f []string
		for b, n := range []string{"u", "v", "w"} {
			if k>>(2-b)&1 == 1 {
				f = append(f, n)
			} else {
				f = append(f, "(1-"+n+")")
			}
		}
		return strings.Join(f, "·")
	}
	for k := 0; k < 8; k++ {
		y := 112 + float64(k)*24
		c.Text(tx, y, fmt.Sprintf("%d (%d,%d,%d)", k, k>>2&1, k>>1&1, k&1), smallSz, Start, ink)
		c.Text(tx+70, y, names(k), smallSz, Start, ink)
		c.Text(tx+300, y, fmt.Sprintf("%.3f", ws[k]), smallSz, End, ink)
	}
	c.Text(tx, 112+8*24+4, fmt.Sprintf("sum of the weights: %.3f", total), smallSz, Start, ink)
	c.Text(tx, 112+8*24+26, "A circle's area is its corner's weight:", smallSz, Start, ink)
	c.Text(tx, 112+8*24+42, "the nearest corner weighs most.", smallSz, Start, ink)
	c.Text(tx, 112+8*24+64, "out[n][f] = Σ_k weight_k · feats[n][k][f]", smallSz, Start, ink)
	return c.Bytes(), nil
}

// TMARing draws a ring of four stages as a timeline of TMA loads and wgmma computes.
func TMARing() ([]byte, error) {
	const tiles, stages, load, compute = 12, 4, 3, 1
	r, err := Schedule(tiles, stages, load, compute)
	if err != nil {
		return nil, err
	}
	const x0, y0, u, rowH = 120.0, 80.0, 48.0, 34.0
	span := r.Span()
	c := NewCanvas(x0+float64(span)*u+40, y0+float64(stages+2)*rowH+110)
	c.Title(fmt.Sprintf("A ring of %d stages: the producer's TMA loads run ahead of the consumers' wgmma", stages))
	for t := 0; t <= span; t++ {
		x := x0 + float64(t)*u
		c.Line(x, y0-6, x, y0+float64(stages+1)*rowH+4, faint, 1)
		c.Text(x, y0-14, fmt.Sprint(t), smallSz, Middle, ink)
	}
	c.Text(x0-8, y0-14, "time", smallSz, End, ink)
	for s := 0; s < stages; s++ {
		c.Text(x0-8, y0+float64(s)*rowH+rowH/2, fmt.Sprintf("stage %d", s), labelSz, End, ink)
	}
	cy := y0 + float64(stages)*rowH + 8
	c.Text(x0-8, cy+rowH/2, "consumers", labelSz, End, ink)
	for i := 0; i < tiles; i++ {
		l, k := r.Loads[i], r.Computes[i]
		y := y0 + float64(l.Stage)*rowH
		c.cell(x0+float64(l.Start)*u, y+3, float64(l.End-l.Start)*u, rowH-6, palette[0], fmt.Sprintf("TMA tile %d", i), smallSz, "#ffffff")
		if k.Start > l.End {
			c.cell(x0+float64(l.End)*u, y+3, float64(k.Start-l.End)*u, rowH-6, light[0], "full", smallSz, ink)
		}
		c.cell(x0+float64(k.Start)*u, y+3, float64(k.End-k.Start)*u, rowH-6, palette[1], fmt.Sprint(i), smallSz, "#ffffff")
		c.cell(x0+float64(k.Start)*u, cy+3, float64(k.End-k.Start)*u, rowH-6, palette[1], fmt.Sprintf("%d·p%d", i, Parity(i, stages)), smallSz, "#ffffff")
	}
	busy := 0
	for _, k := range r.Computes {
		busy += k.End - k.Start
	}
	ty := cy + rowH + 22
	c.legend(x0, ty, palette[0], fmt.Sprintf("TMA load (%d time units), then the stage's full mbarrier flips", load))
	c.legend(x0, ty+20, light[0], "full: landed, waiting for the consumers")
	c.legend(x0, ty+40, palette[1], fmt.Sprintf("wgmma on the tile (%d unit); when done the consumers arrive on the empty mbarrier and the stage is reloaded", compute))
	c.Text(x0, ty+62, fmt.Sprintf("i·pP: tile i waits on phase parity P = (i / %d) & 1. The consumers compute %d of the %d time units: once the ring is full, the loads are hidden.",
		stages, busy, span), smallSz, Start, ink)
	return c.Bytes(), nil
}

// WgmmaAccumulator draws which of the warpgroup's 128 threads holds each accumulator element.
func WgmmaAccumulator() ([]byte, error) {
	const N = 32
	const os, ox, oy = 6.0, 40.0, 80.0
	const cw, ch, dx = 36.0, 19.0, 400.0
	c := NewCanvas(dx+16*cw+30, oy+64*os+60)
	c.Title(fmt.Sprintf("wgmma m64n%dk16: the 64 x %d float32 accumulator over the warpgroup's 128 threads", N, N))
	c.Text(ox, oy-24, fmt.Sprintf("64 x %d, coloured by warp", N), labelSz, Start, ink)
	owner := map[Fragment][2]int{}
	for th := 0; th < 128; th++ {
		for i := 0; i < N/2; i++ {
			owner[WgmmaD(th, i)] = [2]int{th, i}
		}
	}
	for r := 0; r < 64; r++ {
		for col := 0; col < N; col++ {
			o := owner[Fragment{r, col}]
			w := o[0] / 32
			fill := light[w]
			if (r/8+col/8)%2 == 1 {
				fill = palette[w]
			}
			c.Rect(ox+float64(col)*os, oy+float64(r)*os, os, os, fill, "")
			if o[0] == 0 {
				c.Rect(ox+float64(col)*os+1, oy+float64(r)*os+1, os-2, os-2, ink, "")
			}
		}
	}
	for w := 0; w < 4; w++ {
		c.Text(ox+N*os+8, oy+float64(16*w+8)*os-8, fmt.Sprintf("warp %d: rows %d-%d,", w, 16*w, 16*w+15), smallSz, Start, ink)
		c.Text(ox+N*os+8, oy+float64(16*w+8)*os+8, fmt.Sprintf("threads %d-%d", 32*w, 32*w+31), smallSz, Start, ink)
	}
	c.Text(ox, oy+64*os+18, fmt.Sprintf("black: thread 0's %d registers", N/2), smallSz, Start, ink)
	c.Text(dx, oy-24, "warp 0, columns 0-15: thread and register (Tt di)", labelSz, Start, ink)
	for col := 0; col < 16; col++ {
		c.Text(dx+float64(col)*cw+cw/2, oy-8, fmt.Sprint(col), tinySz, Middle, ink)
	}
	for r := 0; r < 16; r++ {
		c.Text(dx-4, oy+float64(r)*ch+ch/2, fmt.Sprint(r), tinySz, End, ink)
		for col := 0; col < 16; col++ {
			o := owner[Fragment{r, col}]
			c.cell(dx+float64(col)*cw, oy+float64(r)*ch, cw, ch, light[(o[0]%32)>>2], fmt.Sprintf("T%d d%d", o[0], o[1]), tinySz, ink)
		}
	}
	for i, l := range []string{
		"Each warp's 16 rows repeat mma.sync m16n8's C layout once per 8 columns:",
		"thread t of warp w holds rows 16w + t/4 and 16w + t/4 + 8, columns 8j + 2(t%4) and +1,",
		fmt.Sprintf("registers d(4j)..d(4j+3) for j = 0..%d: %d registers a thread for N = %d.", N/8-1, N/2, N),
	} {
		c.Text(dx, oy+16*ch+22+float64(i)*16, l, smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

// Packs draws the elementwise template in half: a warp's load of one half per lane against one
// 16-byte pack per lane, the four __hmul2 of a pack, and how the grid-stride loop and the tail share
// an array among the threads.
func Packs() ([]byte, error) {
	const half = 2
	pack := PackElems(half)
	const x0, bw, laneW, rowH = 70.0, 1.5, 24.0, 150.0
	c := NewCanvas(x0+512*bw+30, 630)
	c.Title(fmt.Sprintf("The packed template in half: a lane moves a 16-byte pack of %d halves instead of one", pack))
	for k, p := range []struct {
		name string
		size int
	}{
		{"step 1, naive: lane i reads x[i], one half (2 bytes)", half},
		{fmt.Sprintf("step 2, packed: lane i reads pack i, x[%di..%di+%d], as one uint4 (LDG.E.128)", pack, pack, pack-1), 16},
	} {
		y := 56 + rowH*float64(k)
		addr := StridedAddrs(1, p.size)
		tr := Coalesce(addr, p.size)
		c.Bold(marginPx, y, p.name, labelSz+1, Start, ink)
		c.Text(marginPx, y+18, fmt.Sprintf("%s of 32 B, %s of 128 B: the warp's load instruction moves %d bytes",
			plural(tr.Sectors, "sector"), plural(tr.Lines, "line"), tr.Useful), labelSz, Start, palette[3])
		c.warpAccess(x0, y+36, bw, laneW, addr, p.size)
	}

	// Inside one thread: x and y packs as four __half2 each, multiplied by four __hmul2.
	y := 56 + 2*rowH
	c.Bold(marginPx, y, fmt.Sprintf("inside lane 0: the pack is %d halves, %d __half2 pairs, %d __hmul2", pack, pack/2, pack/2), labelSz+1, Start, ink)
	const cw, ch = 38.0, 20.0
	for r, name := range []string{"x pack 0", "y pack 0", "z pack 0"} {
		ry := y + 20 + float64(r)*(ch+10)
		c.Text(x0+40-8, ry+ch/2, name, smallSz, End, ink)
		for e := 0; e < pack; e++ {
			c.cell(x0+40+float64(e)*cw, ry, cw, ch, light[e/2], fmt.Sprintf("%c[%d]", name[0], e), smallSz, ink)
		}
		for q := 0; q < pack/2; q++ {
			c.Rect(x0+40+float64(2*q)*cw+1, ry+1, 2*cw-2, ch-2, "", palette[q])
		}
	}
	tx := x0 + 40 + float64(pack)*cw + 30
	for i, l := range []string{
		"z pair q = __hmul2(x pair q, y pair q): one instruction multiplies two halves.",
		fmt.Sprintf("One 16-byte load per array and one store carry what step 1 does in %d each:", pack),
		fmt.Sprintf("the same bytes in 1/%d of the memory instructions.", pack),
	} {
		c.Text(tx, y+30+float64(i)*18, l, smallSz, Start, ink)
	}

	// The grid-stride loop and the tail, for a small array and a grid of one warp.
	const n, threads = 645, WarpSize
	packs, tail, err := GridStride(n, pack, threads)
	if err != nil {
		return nil, err
	}
	y += 126
	c.Bold(marginPx, y, fmt.Sprintf("n = %d halves over a grid of %d threads: %s, then a tail of %d", n, threads, plural(len(packs), "pack"), len(tail)), labelSz+1, Start, ink)
	const pw, py = 8.0, 32.0
	trips := 0
	for i, s := range packs {
		c.Rect(x0+float64(i)*pw, y+py, pw, 20, palette[s.Trip%len(palette)], "#ffffff")
		trips = max(trips, s.Trip+1)
	}
	for tr := 0; tr < trips; tr++ {
		first, last := tr*threads, min((tr+1)*threads, len(packs))-1
		mid := x0 + float64(first+last+1)/2*pw
		c.Text(mid, y+py-10, fmt.Sprintf("trip %d: threads %d-%d", tr, packs[first].Thread, packs[last].Thread), smallSz, Middle, palette[tr%len(palette)])
		c.Text(mid, y+py+32, fmt.Sprintf("packs %d-%d", first, last), smallSz, Middle, ink)
	}
	tx = x0 + float64(len(packs))*pw + 14
	for j, s := range tail {
		c.cell(tx+float64(j)*16, y+py, 16, 20, light[3], fmt.Sprint(s.Thread), tinySz, ink)
	}
	c.Text(tx, y+py+32, fmt.Sprintf("tail: halves %d-%d,", len(packs)*pack, n-1), smallSz, Start, ink)
	c.Text(tx, y+py+46, fmt.Sprintf("threads %d-%d", tail[0].Thread, tail[len(tail)-1].Thread), smallSz, Start, ink)
	for i, l := range []string{
		fmt.Sprintf("Thread t takes packs t, t + T, t + 2T, ... (T threads in the grid), then tail element t if t < n mod %d.", pack),
		"On the GPU the grid is blocks of 256 threads, as many as the packs need but at most 32 waves of resident blocks,",
		"so any n fits one launch shape; a view whose pointers are not 16-byte aligned takes the pack-1 kernel instead.",
	} {
		c.Text(marginPx, y+py+60+float64(i)*17, l, smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

// GIoUBoxes draws the generalized IoU of a prediction and its target, for boxes that overlap and
// for a miss: the intersection I, the union U, the smallest enclosing box E and the formula with the
// areas GIoU computes.
func GIoUBoxes() ([]byte, error) {
	const u, pw, ph, x0, y0, gap = 30.0, 11, 10, 40.0, 84.0, 70.0
	c := NewCanvas(2*(x0+pw*u)+gap-10, y0+ph*u+462)
	c.Title("GIoU(p, t) = I/U − (E − U)/E: intersection I, union U, smallest enclosing box E")
	cases := []struct {
		name string
		p, t Box
	}{
		{"p overlaps its target t", Box{4, 3, 10, 9}, Box{2, 1, 8, 6}},
		{"p misses t: I = 0, IoU = 0", Box{7, 4, 10, 8}, Box{1, 1, 5, 5}},
	}
	for k, cs := range cases {
		ox := x0 + float64(k)*(pw*u+gap)
		g := GIoU(cs.p, cs.t)
		at := func(b Box) (float64, float64, float64, float64) {
			return ox + b.X1*u, y0 + b.Y1*u, (b.X2 - b.X1) * u, (b.Y2 - b.Y1) * u
		}
		c.Bold(ox, y0-34, cs.name, labelSz+1, Start, ink)
		for i := 0; i <= pw; i++ {
			c.Line(ox+float64(i)*u, y0, ox+float64(i)*u, y0+ph*u, faint, 1)
			if i%5 == 0 {
				c.Text(ox+float64(i)*u, y0-10, fmt.Sprint(i), tinySz, Middle, ink)
			}
		}
		for j := 0; j <= ph; j++ {
			c.Line(ox, y0+float64(j)*u, ox+pw*u, y0+float64(j)*u, faint, 1)
			if j%5 == 0 {
				c.Text(ox-6, y0+float64(j)*u, fmt.Sprint(j), tinySz, End, ink)
			}
		}
		x, y, w, h := at(g.Hull)
		c.Rect(x, y, w, h, "#e4e4e4", "")
		fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n",
			num(x), num(y), num(w), num(h), ink)
		c.Bold(x+w-4, y-8, "E", labelSz, End, ink)
		for _, b := range []struct {
			box   Box
			color int
		}{{cs.t, 2}, {cs.p, 0}} {
			x, y, w, h := at(b.box)
			c.Rect(x, y, w, h, light[b.color], "")
		}
		if g.Inter > 0 {
			x, y, w, h := at(g.Overlap)
			c.Rect(x, y, w, h, palette[1], "")
			c.Bold(x+w/2, y+h/2, "I", labelSz+2, Middle, "#ffffff")
		}
		for _, b := range []struct {
			box   Box
			color int
			name  string
		}{{cs.t, 2, "t"}, {cs.p, 0, "p"}} {
			x, y, w, h := at(b.box)
			fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="2.5"/>`+"\n",
				num(x), num(y), num(w), num(h), palette[b.color])
			if b.name == "t" {
				c.Bold(x+6, y+10, "t", labelSz+1, Start, palette[b.color])
			} else {
				c.Bold(x+w-6, y+h-10, "p", labelSz+1, End, palette[b.color])
			}
		}
		ty := y0 + ph*u + 22
		lines := []string{
			fmt.Sprintf("A_p = %g, A_t = %g, I = %g", cs.p.Area(), cs.t.Area(), g.Inter),
			fmt.Sprintf("U = A_p + A_t − I = %g,  E = %g", g.Union, g.Enclosing),
			fmt.Sprintf("GIoU = %g/%g − (%g − %g)/%g = %s", g.Inter, g.Union, g.Enclosing, g.Union, g.Enclosing, signed(g.GIoU)),
			fmt.Sprintf("loss term 1 − GIoU = %.3f", 1-g.GIoU),
		}
		if g.Inter == 0 {
			far := cs.p
			far.X1, far.X2 = far.X1+10, far.X2+10
			lines = append(lines, fmt.Sprintf("p moved 10 further right: GIoU = %s", signed(GIoU(far, cs.t).GIoU)))
		} else {
			lines = append(lines, fmt.Sprintf("IoU = I/U = %.3f", g.Inter/g.Union))
		}
		for i, l := range lines {
			c.Text(ox, ty+float64(i)*17, l, labelSz, Start, ink)
		}
	}
	by := y0 + ph*u + 22 + 5*17 + 12
	c.legend(x0, by, "#e4e4e4", "grey: E − U, the part of the enclosing box that neither box covers")
	c.Text(x0, by+22, "IoU is 0 for every miss, however far; GIoU keeps falling toward −1 as p moves away, so the loss still pulls", smallSz, Start, ink)
	c.Text(x0, by+38, fmt.Sprintf("a missed prediction toward its target. In the divisions U and E are clamped at ε = %g.", GIoUEps), smallSz, Start, ink)
	c.giouBatch(by + 76)
	return c.Bytes(), nil
}

// giouBatch draws, from y down, the first images of the GIoU lesson's padded batch (the article's
// B = 1024 images of M = 256 slots, counts floor(|N(0, 3)|)): the valid slots and the padding, and
// which steps walk what.
func (c *Canvas) giouBatch(y float64) {
	const images, slots, sigma, shown, group = 1024, 256, 3.0, 16, 8
	counts := BoxCounts(shown, sigma, slots-1, 1)
	const x0, sw, rh = 110.0, 2.4, 11.0
	c.Bold(marginPx, y, fmt.Sprintf("The padded batch the kernels walk: B = %d images × M = %d slots (the first %d drawn)", images, slots, shown), labelSz+1, Start, ink)
	gy := y + 22
	valid := 0
	for b, n := range counts {
		ry := gy + float64(b)*rh
		c.Rect(x0, ry, slots*sw, rh-2, "#eeeeee", "")
		if n > 0 {
			c.Rect(x0, ry, float64(n)*sw, rh-2, palette[0], "")
		}
		valid += n
		c.Text(x0+slots*sw+6, ry+rh/2-1, fmt.Sprintf("count %d", n), tinySz, Start, ink)
		if b%group == 0 {
			c.Line(x0-8, ry, x0-8, ry+group*rh-2, palette[1], 2)
			c.Text(x0-12, ry+group*rh/2-1, fmt.Sprintf("step 6: block %d,", b/group), tinySz, End, palette[1])
			c.Text(x0-12, ry+group*rh/2+9, "a warp per image", tinySz, End, palette[1])
		}
	}
	for k := 0; k <= slots; k += 64 {
		c.Text(x0+float64(k)*sw, gy-7, fmt.Sprintf("slot %d", k), tinySz, Middle, ink)
	}
	mean := MeanBoxCount(sigma, slots-1)
	ty := gy + shown*rh + 16
	for i, l := range []string{
		fmt.Sprintf("Blue: the valid boxes, %d of the %d slots drawn; grey: padding. Each image holds %.2f boxes on average, %.1f%% of its slots.", valid, shown*slots, mean, 100*mean/slots),
		"Steps 1 and 2: a thread per slot, every slot of every image, then a second pass over all of them.",
		fmt.Sprintf("Step 3: a block per image reads only its valid slots. Step 6: a warp per image, %d images to a block (orange).", group),
	} {
		c.Text(marginPx, ty+float64(i)*16, l, smallSz, Start, ink)
	}
}

// signed writes v with three decimals and a true minus sign.
func signed(v float64) string { return strings.Replace(fmt.Sprintf("%.3f", v), "-", "−", 1) }

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Mistakes09 draws the path a reader's kernel takes from a Try cell to the GPU (Guards): each stage,
// the mistakes of notebook 09 it catches and what the cell then says, and below, what Sanitize's
// compute-sanitizer tools catch of what may pass the check.
func Mistakes09() ([]byte, error) {
	const W, x0, boxW, tx, gap = 860.0, marginPx + 0.0, 270.0, 300.0, 18.0
	gs := Guards()
	name := func(k int) string {
		return fmt.Sprintf("%d. %s", k, strings.ReplaceAll(Mistakes[k-1], "`", ""))
	}
	type row struct {
		g     Guard
		lines []string // right column: the mistakes caught, then what the cell says
		h     float64
	}
	var rows []row
	for _, g := range gs {
		var ls []string
		for _, k := range g.Catches {
			if k < 1 || k > len(Mistakes) {
				return nil, fmt.Errorf("guard %q catches mistake %d of %d", g.Stage, k, len(Mistakes))
			}
			ls = append(ls, "!"+name(k))
		}
		ls = append(ls, wrap("says: "+g.Says, 92)...)
		if len(g.MayPass) > 0 {
			var ns []string
			for _, k := range g.MayPass {
				ns = append(ns, name(k))
			}
			ls = append(ls, wrap("may pass it by luck: "+strings.Join(ns, "; ")+" (Sanitize below)", 92)...)
		}
		rows = append(rows, row{g, ls, math.Max(math.Max(46, 15*float64(len(ls))+12), 37+13*float64(len(wrap(g.Does, 44))))})
	}
	try, san := 0, 0
	for _, r := range rows {
		if strings.HasPrefix(r.g.Call, "Sanitize") {
			san++
		} else {
			try++
		}
	}
	h := 100.0
	for _, r := range rows {
		h += r.h + gap
	}
	h += 60 + 40
	c := NewCanvas(W, h)
	c.Title("From the cell to the GPU: where each of the ten mistakes is caught")
	y := 44.0
	c.cell(x0, y, boxW, 26, light[7], `vecadd.Try(env, "naive", code)`, labelSz, ink)
	c.Text(tx, y+13, "your cell: the edited kernel in place of the step's own", labelSz, Start, ink)
	y += 26
	for i, r := range rows {
		fill, stroke := light[2], palette[2] // before the GPU runs it
		switch {
		case i >= try:
			fill, stroke = light[4], palette[4]
		case i >= 3:
			fill, stroke = light[0], palette[0]
		}
		if i == try { // Sanitize: the same code once more, in a child process
			y += 10
			c.Line(x0, y, W-marginPx, y, grid, 1)
			c.cell(x0, y+10, boxW, 26, light[7], `vecadd.Sanitize(env, "naive", code, tool)`, smallSz+1, ink)
			c.Text(tx, y+16, "Sanitize in place of Try: the same code run once more in a child process under", smallSz+1, Start, ink)
			c.Text(tx, y+31, "compute-sanitizer, compiled with line information; the first reports are shown", smallSz+1, Start, ink)
			y += 36
		}
		if i <= try { // the tools are alternatives: no arrow between them
			c.Arrow(x0+boxW/2, y, x0+boxW/2, y+gap-2, ink)
		} else {
			c.Line(x0+boxW/2, y, x0+boxW/2, y+gap, grid, 1)
		}
		y += gap
		c.Rect(x0, y, boxW, r.h, fill, stroke)
		c.Bold(x0+8, y+15, r.g.Stage, labelSz, Start, ink)
		for j, l := range wrap(r.g.Does, 44) {
			c.Text(x0+8, y+31+13*float64(j), l, smallSz+1, Start, ink)
		}
		for j, l := range r.lines {
			ly := y + 14 + 15*float64(j)
			if strings.HasPrefix(l, "!") {
				c.Bold(tx, ly, l[1:], labelSz, Start, palette[3])
			} else {
				c.Text(tx, ly, l, smallSz+1, Start, ink)
			}
		}
		y += r.h
	}
	y += 24
	c.legend(x0, y, light[2], "before the GPU runs it (also without a GPU)")
	c.legend(x0+310, y, light[0], "on the GPU, under Try")
	c.legend(x0+500, y, light[4], "under compute-sanitizer")
	c.Text(x0, y+24, "A kernel a stage lets pass goes on to the next; in red, the mistakes of this notebook that the stage stops, with what the cell says.", smallSz+1, Start, ink)
	return c.Bytes(), nil
}

// wrap breaks s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			out = append(out, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// SpaceToDepthFig draws space-to-depth at stride 2 on one 8 x 8 channel: the four channels its
// 2 x 2 blocks become (SpaceToDepthPixel), and one output's 3 x 3 window at stride 2 as a 2 x 2
// window at stride 1 in each of them (SpaceToDepthTap), its taps past the 3 x 3 zero.
func SpaceToDepthFig() ([]byte, error) {
	const n, S, R = 8, 2, 3
	const oh, ow = 1, 1 // the outlined output pixel
	const s, x0, y0 = 30.0, 40.0, 84.0
	const cs, x1, gap = 24.0, 400.0, 60.0
	rs := (R + S - 1) / S
	q := n / S
	c := NewCanvas(800, y0+float64(n)*s+120)
	c.Title("Space-to-depth: a 3 x 3 filter at stride 2 becomes a 2 x 2 filter at stride 1 over 4 channels")
	c.Text(x0, y0-22, "one input channel, 8 x 8 (pixel numbers)", labelSz, Start, ink)
	chX := func(ch int) float64 { return x1 + float64(ch%S)*(float64(q)*cs+gap) }
	chY := func(ch int) float64 { return y0 + float64(ch/S)*(float64(q)*cs+36) }
	for ih := 0; ih < n; ih++ {
		for iw := 0; iw < n; iw++ {
			ch, i, j := SpaceToDepthPixel(0, ih, iw, S, 0)
			c.cell(x0+float64(iw)*s, y0+float64(ih)*s, s, s, light[ch], fmt.Sprint(ih*n+iw), smallSz, ink)
			c.cell(chX(ch)+float64(j)*cs, chY(ch)+float64(i)*cs, cs, cs, light[ch], fmt.Sprint(ih*n+iw), tinySz+1, ink)
		}
	}
	c.Frame(x0+float64(ow*S)*s, y0+float64(oh*S)*s, R*s, R*s, palette[3], 3)
	reached := map[[3]int]bool{} // (channel, tap row, tap column) that a tap of the 3 x 3 reaches
	for r := 0; r < R; r++ {
		for t := 0; t < R; t++ {
			off, ri, si := SpaceToDepthTap(r, t, S)
			reached[[3]int{off, ri, si}] = true
		}
	}
	zeros := 0
	for ch := 0; ch < S*S; ch++ {
		c.Text(chX(ch), chY(ch)-8, fmt.Sprintf("channel %d: x[2i+%d][2j+%d]", ch, ch/S, ch%S), smallSz, Start, ink)
		for ri := 0; ri < rs; ri++ {
			for si := 0; si < rs; si++ {
				if reached[[3]int{ch, ri, si}] {
					continue
				}
				zeros++
				x, y := chX(ch)+float64(ow+si)*cs, chY(ch)+float64(oh+ri)*cs
				c.Line(x+3, y+3, x+cs-3, y+cs-3, grid, 1.5)
				c.Line(x+cs-3, y+3, x+3, y+cs-3, grid, 1.5)
			}
		}
		c.Frame(chX(ch)+float64(ow)*cs, chY(ch)+float64(oh)*cs, float64(rs)*cs, float64(rs)*cs, palette[3], 3)
	}
	var lines []string
	for _, l := range []string{
		fmt.Sprintf("Red: the 3 x 3 window of output pixel (%d, %d) at stride 2 (left), and the 2 x 2 window of the same output at stride 1 in each channel (right).", oh, ow),
		fmt.Sprintf("Crossed: the %d of the 16 taps of the 2 x 2 windows that no tap of the 3 x 3 reaches: their filter weights are zero.", zeros),
		"Each colour is one position in a 2 x 2 block, and one channel after the rearrangement: the same pixels, the same products.",
		"At stride 1 the k tiles are whole rows of channels that TMA loads as boxes; AlexNet's 3 channels at stride 4 become 48 channels of 3 x 3 taps.",
	} {
		lines = append(lines, wrap(l, 130)...)
	}
	for i, l := range lines {
		c.Text(x0, y0+float64(n)*s+26+float64(i)*16, l, smallSz, Start, ink)
	}
	return c.Bytes(), nil
}

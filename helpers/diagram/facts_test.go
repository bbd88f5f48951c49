package diagram

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestCoalesce(t *testing.T) {
	for _, c := range []struct {
		name                 string
		stride, size         int
		sectors, lines, used int
	}{
		{"contiguous float", 1, 4, 4, 1, 128},
		{"stride-2 float", 2, 4, 8, 2, 128},
		{"stride-8 float", 8, 4, 32, 8, 128},
		{"stride-32 float (a column)", 32, 4, 32, 32, 128},
		{"contiguous float4", 1, 16, 16, 4, 512},
	} {
		got := Coalesce(StridedAddrs(c.stride, c.size), c.size)
		if got.Sectors != c.sectors || got.Lines != c.lines || got.Useful != c.used || got.Moved != 32*c.sectors {
			t.Errorf("%s: %+v, want %d sectors, %d lines, %d useful bytes", c.name, got, c.sectors, c.lines, c.used)
		}
	}
	// A misaligned contiguous warp straddles one more sector and line.
	addr := StridedAddrs(1, 4)
	for i := range addr {
		addr[i] += 4
	}
	if got := Coalesce(addr, 4); got.Sectors != 5 || got.Lines != 2 {
		t.Errorf("contiguous floats from byte 4: %+v, want 5 sectors and 2 lines", got)
	}
}

func TestBankConflict(t *testing.T) {
	col := func(rowWords int) []int {
		var w []int
		for i := 0; i < 32; i++ {
			w = append(w, i*rowWords)
		}
		return w
	}
	if got := BankConflict(col(32)); got != 32 {
		t.Errorf("a column of a 32-word-row tile: %d passes, want 32", got)
	}
	if got := BankConflict(col(33)); got != 1 {
		t.Errorf("a column of a 33-word-row tile: %d passes, want 1", got)
	}
	if got := BankConflict(make([]int, 32)); got != 1 {
		t.Errorf("one word broadcast to 32 lanes: %d passes, want 1", got)
	}
	for c := 0; c < 8; c++ {
		var plain, swz []int
		for r := 0; r < 8; r++ {
			plain = append(plain, ChunkWords(r, c, 32, false)...)
			swz = append(swz, ChunkWords(r, c, 32, true)...)
		}
		if got := BankConflict(plain); got != 8 {
			t.Errorf("chunk %d of 8 rows unswizzled: %d passes, want 8", c, got)
		}
		if got := BankConflict(swz); got != 1 {
			t.Errorf("chunk %d of 8 rows swizzled: %d passes, want 1", c, got)
		}
	}
}

func TestWarpTileLane(t *testing.T) {
	for _, c := range []struct{ r, c, lane int }{{0, 0, 0}, {1, 0, 1}, {7, 3, 7}, {0, 4, 8}, {0, 16, 0}, {8, 0, 0}, {63, 31, 31}, {5, 13, 29}} {
		if got := WarpTileLane(c.r, c.c); got != c.lane {
			t.Errorf("element (%d, %d): lane %d, want %d", c.r, c.c, got, c.lane)
		}
	}
	count := map[int]int{}
	for r := 0; r < 64; r++ {
		for c := 0; c < 32; c++ {
			count[WarpTileLane(r, c)]++
		}
	}
	for l := 0; l < 32; l++ {
		if count[l] != 64 {
			t.Errorf("lane %d owns %d elements, want 8 x 8", l, count[l])
		}
	}
}

// each checks that f maps (lane, register) onto every element of a rows x cols tile exactly once.
func each(t *testing.T, name string, lanes, regs, rows, cols int, f func(lane, i int) Fragment) {
	t.Helper()
	seen := map[Fragment]bool{}
	for l := 0; l < lanes; l++ {
		for i := 0; i < regs; i++ {
			e := f(l, i)
			if e.Row < 0 || e.Row >= rows || e.Col < 0 || e.Col >= cols || seen[e] {
				t.Fatalf("%s: lane %d register %d gives %+v: outside the %dx%d tile or twice", name, l, i, e, rows, cols)
			}
			seen[e] = true
		}
	}
}

func TestMmaFragments(t *testing.T) {
	each(t, "A", 32, 4, 16, 8, MmaA)
	each(t, "B", 32, 2, 8, 8, MmaB)
	each(t, "C", 32, 4, 16, 8, MmaC)
	// The PTX ISA's formulas, element by element, written the other way round: from the element to
	// the lane that holds it.
	for r := 0; r < 16; r++ {
		for c := 0; c < 8; c++ {
			lane, reg := (r%8)*4+c%4, r/8+2*(c/4)
			if got := MmaA(lane, reg); got != (Fragment{r, c}) {
				t.Errorf("A(%d,%d): lane %d a%d holds %+v", r, c, lane, reg, got)
			}
			lane, reg = (r%8)*4+c/2, 2*(r/8)+c%2
			if got := MmaC(lane, reg); got != (Fragment{r, c}) {
				t.Errorf("C(%d,%d): lane %d c%d holds %+v", r, c, lane, reg, got)
			}
		}
	}
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			if got := MmaB(c*4+r%4, r/4); got != (Fragment{r, c}) {
				t.Errorf("B(%d,%d): lane %d b%d holds %+v", r, c, c*4+r%4, r/4, got)
			}
		}
	}
	if got := MmaC(5, 3); got != (Fragment{9, 3}) {
		t.Errorf("lane 5 c3 holds %+v, want (9, 3)", got)
	}
}

func TestWgmmaD(t *testing.T) {
	for _, n := range []int{8, 16, 64, 256} {
		each(t, "wgmma D", 128, n/2, 64, n, WgmmaD)
	}
	if got := WgmmaD(37, 5); got != (Fragment{16 + 1 + 0, 8 + 2 + 1}) {
		t.Errorf("thread 37 d5 holds %+v, want (17, 11)", got)
	}
	if got := WgmmaD(127, 7); got != (Fragment{63, 15}) {
		t.Errorf("thread 127 d7 holds %+v, want (63, 15)", got)
	}
}

func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 100; trial++ {
		xs := make([]float64, 1+rng.IntN(50))
		for i := range xs {
			xs[i] = 20 * (rng.Float64() - 0.5)
		}
		cut := rng.IntN(len(xs) + 1)
		m := Merge(Partial(xs[:cut]), Partial(xs[cut:]))
		want := Pair{M: math.Inf(-1)}
		for _, x := range xs {
			want.M = math.Max(want.M, x)
		}
		for _, x := range xs {
			want.S += math.Exp(x - want.M)
		}
		if m.M != want.M || math.Abs(m.S-want.S) > 1e-12*want.S {
			t.Fatalf("%v cut at %d: merged %+v, want %+v", xs, cut, m, want)
		}
	}
}

// Chan's merge of two parts' triples is the two-pass mean and sum of squared deviations of the
// whole sample, wherever it is cut (an empty part included).
func TestChan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 100; trial++ {
		xs := make([]float64, 1+rng.IntN(50))
		for i := range xs {
			xs[i] = 1000 + 20*(rng.Float64()-0.5)
		}
		cut := rng.IntN(len(xs) + 1)
		m := Chan(Stats(xs[:cut]), Stats(xs[cut:]))
		var mean, m2 float64
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for _, x := range xs {
			m2 += (x - mean) * (x - mean)
		}
		if m.N != float64(len(xs)) || math.Abs(m.Mean-mean) > 1e-12*mean || math.Abs(m.M2-m2) > 1e-9*(m2+1) {
			t.Fatalf("%v cut at %d: merged %+v, want n %d mean %v M2 %v", xs, cut, m, len(xs), mean, m2)
		}
	}
}

func TestConvGeom(t *testing.T) {
	g := ConvGeom{H: 5, W: 5, R: 3, Stride: 1, Pad: 1}
	if oh, ow := g.Out(); oh != 5 || ow != 5 {
		t.Errorf("5x5, 3x3, pad 1: output %dx%d, want 5x5", oh, ow)
	}
	uses, pads := map[[2]int]int{}, 0
	for oh := 0; oh < 5; oh++ {
		for ow := 0; ow < 5; ow++ {
			for r := 0; r < 3; r++ {
				for s := 0; s < 3; s++ {
					ih, iw, in := g.Tap(oh, ow, r, s)
					if in {
						uses[[2]int{ih, iw}]++
					} else {
						pads++
					}
				}
			}
		}
	}
	if uses[[2]int{2, 2}] != 9 || uses[[2]int{0, 0}] != 4 || uses[[2]int{0, 2}] != 6 {
		t.Errorf("uses of centre, corner, edge: %d %d %d, want 9 4 6", uses[[2]int{2, 2}], uses[[2]int{0, 0}], uses[[2]int{0, 2}])
	}
	if pads != 56 || sum(uses)+pads != 25*9 {
		t.Errorf("%d padding entries, want 56", pads)
	}
	if oh, ow := (ConvGeom{H: 227, W: 227, R: 11, Stride: 4}).Out(); oh != 55 || ow != 55 {
		t.Errorf("AlexNet's first layer: %dx%d, want 55x55", oh, ow)
	}
}

func sum(m map[[2]int]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

func TestPool(t *testing.T) {
	if h, w := PoolRegion(4, 6, 3, 2); h != 9 || w != 13 {
		t.Errorf("4x6 windows of 3x3 at stride 2: region %dx%d, want 9x13", h, w)
	}
	n := PoolCover(4, 6, 3, 2)
	if n[0][0] != 1 || n[0][2] != 2 || n[2][2] != 4 || n[1][1] != 1 || n[8][12] != 1 {
		t.Errorf("cover counts %d %d %d %d %d, want 1 2 4 1 1", n[0][0], n[0][2], n[2][2], n[1][1], n[8][12])
	}
}

func TestTrilinearWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 100; trial++ {
		u, v, w := rng.Float64(), rng.Float64(), rng.Float64()
		ws := TrilinearWeights(u, v, w)
		s := 0.0
		for _, x := range ws {
			s += x
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("weights at (%g, %g, %g) sum to %g", u, v, w, s)
		}
		// The article's a, b, c, d: corners 0..3 weigh (1-u)·{a, b, c, d}.
		a, b, c := (1-v)*(1-w), (1-v)*w, v*(1-w)
		d := 1 - a - b - c
		for k, want := range []float64{a, b, c, d} {
			if math.Abs(ws[k]-(1-u)*want) > 1e-12 || math.Abs(ws[4+k]-u*want) > 1e-12 {
				t.Fatalf("corner %d at (%g, %g, %g): %g and %g, want the article's", k, u, v, w, ws[k], ws[4+k])
			}
		}
	}
	if ws := TrilinearWeights(1, 0, 1); ws[5] != 1 {
		t.Errorf("at corner (1, 0, 1) corner 5 weighs %g, want 1", ws[5])
	}
}

func TestSchedule(t *testing.T) {
	if _, err := Schedule(4, 0, 1, 1); err == nil {
		t.Error("a ring of 0 stages was accepted")
	}
	one, err := Schedule(6, 1, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one.Span() != 6*(3+1) {
		t.Errorf("one stage: span %d, want %d (no overlap)", one.Span(), 6*4)
	}
	four, err := Schedule(12, 4, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range four.Computes {
		if c.Start < four.Loads[i].End {
			t.Errorf("tile %d computed at %d before its load landed at %d", i, c.Start, four.Loads[i].End)
		}
		if i >= 4 && four.Loads[i].Start < four.Computes[i-4].End {
			t.Errorf("tile %d loaded into stage %d at %d before tile %d released it at %d", i, i%4, four.Loads[i].Start, i-4, four.Computes[i-4].End)
		}
	}
	// Enough stages hide the loads: after the first, one tile per compute time.
	if four.Span() != 3+12*1 {
		t.Errorf("four stages: span %d, want %d", four.Span(), 3+12)
	}
	if Parity(0, 4) != 0 || Parity(4, 4) != 1 || Parity(9, 4) != 0 {
		t.Error("phase parity of tiles 0, 4, 9 in a ring of 4 is not 0, 1, 0")
	}
}

func TestGridStride(t *testing.T) {
	if got := PackElems(4); got != 4 {
		t.Errorf("a pack holds %d floats, want 4", got)
	}
	if got := PackElems(2); got != 8 {
		t.Errorf("a pack holds %d halves, want 8", got)
	}
	if _, _, err := GridStride(10, 8, 4); err == nil {
		t.Error("a grid of fewer threads than the tail can need was accepted")
	}
	for _, c := range []struct{ n, pack, threads int }{{0, 8, 32}, {7, 8, 32}, {645, 8, 32}, {1000, 4, 96}, {4096, 8, 256}} {
		packs, tail, err := GridStride(c.n, c.pack, c.threads)
		if err != nil {
			t.Fatal(err)
		}
		// Every element is handled exactly once: the packs' elements, then the tail's.
		seen := make([]int, c.n)
		for i, s := range packs {
			if s.Thread >= c.threads || s.Thread+s.Trip*c.threads != i {
				t.Fatalf("n %d: pack %d goes to thread %d on trip %d", c.n, i, s.Thread, s.Trip)
			}
			for e := i * c.pack; e < (i+1)*c.pack; e++ {
				seen[e]++
			}
		}
		for j, s := range tail {
			if s.Thread != j || s.Trip != 0 {
				t.Fatalf("n %d: tail element %d goes to thread %d on trip %d", c.n, j, s.Thread, s.Trip)
			}
			seen[len(packs)*c.pack+j]++
		}
		for e, k := range seen {
			if k != 1 {
				t.Fatalf("n %d pack %d over %d threads: element %d handled %d times", c.n, c.pack, c.threads, e, k)
			}
		}
	}
	packs, tail, _ := GridStride(645, 8, 32)
	if len(packs) != 80 || len(tail) != 5 || packs[79] != (Slot{Thread: 15, Trip: 2}) {
		t.Errorf("645 halves over 32 threads: %d packs (last %+v), %d tail elements; want 80 (thread 15, trip 2) and 5", len(packs), packs[len(packs)-1], len(tail))
	}
}

// raster counts the unit cells of integer boxes: inside p, t, both, and the hull's cells.
func raster(p, t Box) (inter, union, hull float64) {
	in := func(b Box, x, y float64) bool { return x >= b.X1 && x < b.X2 && y >= b.Y1 && y < b.Y2 }
	h := Box{math.Min(p.X1, t.X1), math.Min(p.Y1, t.Y1), math.Max(p.X2, t.X2), math.Max(p.Y2, t.Y2)}
	for x := h.X1; x < h.X2; x++ {
		for y := h.Y1; y < h.Y2; y++ {
			a, b := in(p, x, y), in(t, x, y)
			if a && b {
				inter++
			}
			if a || b {
				union++
			}
			hull++
		}
	}
	return inter, union, hull
}

func TestGIoU(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	box := func() Box {
		x, y := float64(rng.IntN(12)), float64(rng.IntN(12))
		return Box{x, y, x + float64(1+rng.IntN(8)), y + float64(1+rng.IntN(8))}
	}
	for trial := 0; trial < 300; trial++ {
		p, q := box(), box()
		g := GIoU(p, q)
		i, u, e := raster(p, q)
		if g.Inter != i || g.Union != u || g.Enclosing != e {
			t.Fatalf("%+v, %+v: I %g U %g E %g, counted %g %g %g", p, q, g.Inter, g.Union, g.Enclosing, i, u, e)
		}
		if want := i/u - (e-u)/e; math.Abs(g.GIoU-want) > 1e-12 || g.GIoU <= -1 || g.GIoU > 1 {
			t.Fatalf("%+v, %+v: GIoU %g, want %g in (-1, 1]", p, q, g.GIoU, want)
		}
		if r := GIoU(q, p); math.Abs(r.GIoU-g.GIoU) > 1e-15 {
			t.Fatalf("GIoU is not symmetric: %g and %g", g.GIoU, r.GIoU)
		}
	}
	if g := GIoU(Box{1, 2, 5, 7}, Box{1, 2, 5, 7}); g.GIoU != 1 {
		t.Errorf("identical boxes: GIoU %g, want 1", g.GIoU)
	}
	// A miss: IoU is 0 wherever the boxes are, GIoU falls toward -1 as they part.
	near, far := GIoU(Box{0, 0, 2, 2}, Box{3, 0, 5, 2}), GIoU(Box{0, 0, 2, 2}, Box{1000, 0, 1002, 2})
	if near.Inter != 0 || near.GIoU != -0.2 || far.GIoU >= near.GIoU || far.GIoU > -0.99 {
		t.Errorf("misses: GIoU %g near (want -0.2), %g far (want below -0.99)", near.GIoU, far.GIoU)
	}
	// Two empty boxes at one point: the clamps keep it finite.
	if g := GIoU(Box{1, 1, 1, 1}, Box{1, 1, 1, 1}); g.GIoU != 0 {
		t.Errorf("two empty boxes: GIoU %g, want 0", g.GIoU)
	}
}

func TestBoxCounts(t *testing.T) {
	const n, sigma, most = 200000, 3.0, 255
	cs := BoxCounts(n, sigma, most, 1)
	sum := 0
	for _, c := range cs {
		if c < 0 || c > most {
			t.Fatalf("count %d outside [0, %d]", c, most)
		}
		sum += c
	}
	// The sample mean is within a few standard errors (the counts' deviation is below sigma) of the
	// expectation, which is close to sigma·√(2/π) - 1/2 for a floor of |N(0, sigma)|.
	mean, want := float64(sum)/n, MeanBoxCount(sigma, most)
	if math.Abs(mean-want) > 4*sigma/math.Sqrt(n) || math.Abs(want-(sigma*math.Sqrt(2/math.Pi)-0.5)) > 0.05 {
		t.Errorf("mean count %v, expected %v", mean, want)
	}
	if got := BoxCounts(5, 1e6, 7, 2); got[0] != 7 {
		t.Errorf("a huge count was not clipped to 7: %v", got)
	}
}

// Space-to-depth turns a strided convolution into a stride-1 one: on random inputs, every output of
// an R x R filter at stride S with padding P over C channels equals the ceil(R/S)-wide filter at
// stride 1 over the C·S² rearranged channels (SpaceToDepthPixel, SpaceToDepthTap), taps past R zero.
func TestSpaceToDepth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, g := range []struct{ C, H, W, R, S, P int }{{3, 23, 19, 11, 4, 2}, {2, 9, 10, 3, 2, 1}, {1, 8, 8, 5, 3, 0}, {2, 7, 6, 3, 1, 1}} {
		x := make([][][]float64, g.C)
		w := make([][][]float64, g.C)
		for c := range x {
			x[c] = make([][]float64, g.H)
			for i := range x[c] {
				x[c][i] = make([]float64, g.W)
				for j := range x[c][i] {
					x[c][i][j] = r.Float64()*2 - 1
				}
			}
			w[c] = make([][]float64, g.R)
			for i := range w[c] {
				w[c][i] = make([]float64, g.R)
				for j := range w[c][i] {
					w[c][i][j] = r.Float64()*2 - 1
				}
			}
		}
		rs := (g.R + g.S - 1) / g.S
		hp, wp := (g.H+2*g.P+g.S-1)/g.S+rs, (g.W+2*g.P+g.S-1)/g.S+rs
		cs := g.C * g.S * g.S
		x2 := make([][][]float64, cs)
		w2 := make([][][]float64, cs)
		for c := range x2 {
			x2[c] = make([][]float64, hp)
			for i := range x2[c] {
				x2[c][i] = make([]float64, wp)
			}
			w2[c] = make([][]float64, rs)
			for i := range w2[c] {
				w2[c][i] = make([]float64, rs)
			}
		}
		for c := 0; c < g.C; c++ {
			for ih := 0; ih < g.H; ih++ {
				for iw := 0; iw < g.W; iw++ {
					ch, i, j := SpaceToDepthPixel(c, ih, iw, g.S, g.P)
					x2[ch][i][j] = x[c][ih][iw]
				}
			}
			for a := 0; a < g.R; a++ {
				for b := 0; b < g.R; b++ {
					off, ri, si := SpaceToDepthTap(a, b, g.S)
					w2[c*g.S*g.S+off][ri][si] = w[c][a][b]
				}
			}
		}
		oh, ow := ConvGeom{H: g.H, W: g.W, R: g.R, Stride: g.S, Pad: g.P}.Out()
		for o1 := 0; o1 < oh; o1++ {
			for o2 := 0; o2 < ow; o2++ {
				var want, got float64
				for c := 0; c < g.C; c++ {
					for a := 0; a < g.R; a++ {
						for b := 0; b < g.R; b++ {
							if ih, iw, in := (ConvGeom{H: g.H, W: g.W, R: g.R, Stride: g.S, Pad: g.P}).Tap(o1, o2, a, b); in {
								want += w[c][a][b] * x[c][ih][iw]
							}
						}
					}
				}
				for c := 0; c < cs; c++ {
					for a := 0; a < rs; a++ {
						for b := 0; b < rs; b++ {
							got += w2[c][a][b] * x2[c][o1+a][o2+b]
						}
					}
				}
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("%+v: output (%d, %d) is %g after space-to-depth, %g before", g, o1, o2, got, want)
				}
			}
		}
	}
}

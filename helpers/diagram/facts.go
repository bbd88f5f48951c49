package diagram

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// WarpSize is the number of threads in a warp.
const WarpSize = 32

// Transactions is what a warp's access costs the memory system: the distinct 32-byte sectors and
// 128-byte lines its bytes fall in, and how many of the fetched bytes were asked for.
type Transactions struct {
	Sectors, Lines int
	Useful, Moved  int // bytes asked for, bytes of the sectors fetched
}

// Coalesce counts the sectors and lines that a warp touches when lane i accesses the bytes
// [addr[i], addr[i]+size).
func Coalesce(addr []int, size int) Transactions {
	sectors, lines, bytes := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for _, a := range addr {
		for b := a; b < a+size; b++ {
			sectors[b/32], lines[b/128], bytes[b] = true, true, true
		}
	}
	return Transactions{Sectors: len(sectors), Lines: len(lines), Useful: len(bytes), Moved: 32 * len(sectors)}
}

// StridedAddrs is the byte address of each lane's element when lane i reads element i*stride of an
// array of size-byte elements starting at byte 0.
func StridedAddrs(stride, size int) []int {
	a := make([]int, WarpSize)
	for i := range a {
		a[i] = i * stride * size
	}
	return a
}

// BankConflict is the number of passes (wavefronts) a warp's shared-memory access takes: 32 banks
// of 4-byte words, and a bank serves one distinct word per pass (lanes reading the same word share
// it). words are the word indices the warp touches.
func BankConflict(words []int) int {
	perBank := map[int]map[int]bool{}
	for _, w := range words {
		b := w % 32
		if perBank[b] == nil {
			perBank[b] = map[int]bool{}
		}
		perBank[b][w] = true
	}
	most := 0
	for _, ws := range perBank {
		most = max(most, len(ws))
	}
	return most
}

// Swizzle is where the XOR swizzle stores 16-byte chunk c (0..7) of row r: chunk c XOR (r mod 8).
func Swizzle(r, c int) int { return c ^ (r % 8) }

// ChunkWords are the four word indices of 16-byte chunk c of row r in a tile whose rows are
// rowWords 4-byte words long, swizzled or not.
func ChunkWords(r, c, rowWords int, swizzled bool) []int {
	if swizzled {
		c = Swizzle(r, c)
	}
	base := r*rowWords + 4*c
	return []int{base, base + 1, base + 2, base + 3}
}

// WarpTileLane is the lane of step 7's warp that owns element (r, c) of its 64 x 32 warp tile:
// lanes form an 8 x 4 grid, lane (lm, ln) = (lane & 7, lane >> 3) owning rows lm + 8i and the
// columns 4ln..4ln+3 and 16+4ln..16+4ln+3.
func WarpTileLane(r, c int) int { return r%8 + 8*((c%16)/4) }

// Fragment places one register of one lane in a tile: element (Row, Col).
type Fragment struct{ Row, Col int }

// MmaA is the element of the 16 x 8 A tile that register i (0..3) of lane holds in
// mma.sync.m16n8k8 with .tf32 inputs (PTX ISA, "Matrix Fragments for mma.m16n8k8"): groupID =
// lane >> 2, threadID_in_group = lane % 4; row groupID (+8 for a1, a3), column threadID_in_group
// (+4 for a2, a3).
func MmaA(lane, i int) Fragment {
	g, t := lane>>2, lane%4
	return Fragment{Row: g + 8*(i&1), Col: t + 4*(i>>1)}
}

// MmaB is the element of the 8 x 8 B tile that register i (0..1) of lane holds: row
// threadID_in_group (+4 for b1), column groupID.
func MmaB(lane, i int) Fragment {
	g, t := lane>>2, lane%4
	return Fragment{Row: t + 4*i, Col: g}
}

// MmaC is the element of the 16 x 8 float32 accumulator that register i (0..3) of lane holds: row
// groupID (+8 for c2, c3), column 2·threadID_in_group + (i & 1).
func MmaC(lane, i int) Fragment {
	g, t := lane>>2, lane%4
	return Fragment{Row: g + 8*(i>>1), Col: 2*t + (i & 1)}
}

// WgmmaD is the element of the 64 x N float32 accumulator of wgmma.m64nNk16 that register i (0 ..
// N/2-1) of thread (0..127) of the warpgroup holds: warp w = thread/32 owns rows 16w..16w+15, and
// within them the registers repeat the m16n8 accumulator layout once per 8 columns (PTX ISA,
// "Matrix fragments for wgmma.mma_async.m64nNk16", register fragment D).
func WgmmaD(thread, i int) Fragment {
	w, lane := thread/32, thread%32
	f := MmaC(lane, i%4)
	return Fragment{Row: 16*w + f.Row, Col: 8*(i/4) + f.Col}
}

// Pair is a softmax partial over part of a row: its largest value M and the sum S of exp(x - M).
type Pair struct{ M, S float64 }

// Partial is the pair of the values xs.
func Partial(xs []float64) Pair {
	p := Pair{M: math.Inf(-1)}
	for _, x := range xs {
		p = Merge(p, Pair{M: x, S: 1})
	}
	return p
}

// Merge combines two partials: the larger maximum, and each sum rescaled to it.
func Merge(a, b Pair) Pair {
	m := math.Max(a.M, b.M)
	if math.IsInf(m, -1) {
		return Pair{M: m}
	}
	return Pair{M: m, S: a.S*math.Exp(a.M-m) + b.S*math.Exp(b.M-m)}
}

// Triple is a layer norm partial over part of a sample: its count N, its mean and M2, the sum of
// squared deviations from that mean (Welford's running statistics).
type Triple struct{ N, Mean, M2 float64 }

// Stats is the triple of the values xs, by Welford's update one value at a time.
func Stats(xs []float64) Triple {
	var t Triple
	for _, x := range xs {
		t = Chan(t, Triple{N: 1, Mean: x})
	}
	return t
}

// Chan merges the triples of two parts into the triple of both (Chan, Golub and LeVeque):
// d = mean_b - mean_a, mean = mean_a + d*n_b/n, M2 = M2_a + M2_b + d^2*n_a*n_b/n. An empty part
// gives the other unchanged.
func Chan(a, b Triple) Triple {
	switch {
	case a.N == 0:
		return b
	case b.N == 0:
		return a
	}
	n := a.N + b.N
	d := b.Mean - a.Mean
	return Triple{N: n, Mean: a.Mean + d*b.N/n, M2: a.M2 + b.M2 + d*d*a.N*b.N/n}
}

// ConvGeom is a 2-D convolution's geometry on one channel: an H x W input, an R x R filter, stride
// and padding.
type ConvGeom struct{ H, W, R, Stride, Pad int }

// Out is the output's height and width.
func (g ConvGeom) Out() (int, int) {
	return (g.H+2*g.Pad-g.R)/g.Stride + 1, (g.W+2*g.Pad-g.R)/g.Stride + 1
}

// Tap is the input pixel that tap (r, s) of output pixel (oh, ow) reads, and whether it is inside
// the input (outside, it is the padding's zero): the entry of row p = oh·OW + ow, column q = r·R + s
// of the im2col matrix.
func (g ConvGeom) Tap(oh, ow, r, s int) (ih, iw int, inside bool) {
	ih, iw = oh*g.Stride-g.Pad+r, ow*g.Stride-g.Pad+s
	return ih, iw, ih >= 0 && ih < g.H && iw >= 0 && iw < g.W
}

// SpaceToDepthPixel is where pixel (ih, iw) of channel c lands when space-to-depth with stride S
// and padding P rearranges the padded input: channel (c·S + dy)·S + dx at (i, j), where
// ih + P = S·i + dy and iw + P = S·j + dx. Each S x S block of a channel's pixels becomes one pixel
// of S² channels.
func SpaceToDepthPixel(c, ih, iw, S, P int) (ch, i, j int) {
	i, dy := (ih+P)/S, (ih+P)%S
	j, dx := (iw+P)/S, (iw+P)%S
	return (c*S+dy)*S + dx, i, j
}

// SpaceToDepthTap is where tap (r, s) of a filter of stride S lands in the stride-1 filter over the
// rearranged channels: the channel offset (r mod S)·S + (s mod S) within its input channel's S², and
// the tap (r / S, s / S) of a ceil(R / S)-wide filter, whose taps that no (r, s) reaches are zeros.
func SpaceToDepthTap(r, s, S int) (chOff, ri, si int) {
	return (r%S)*S + s%S, r / S, s / S
}

// PoolRegion is the side of the conv region that th x tw windows of a size x size max pool with the
// given stride cover: (t-1)·stride + size each way.
func PoolRegion(th, tw, size, stride int) (int, int) {
	return (th-1)*stride + size, (tw-1)*stride + size
}

// PoolCover counts the windows of a th x tw block of pool windows (size, stride) that cover each
// pixel of their region.
func PoolCover(th, tw, size, stride int) [][]int {
	h, w := PoolRegion(th, tw, size, stride)
	n := make([][]int, h)
	for i := range n {
		n[i] = make([]int, w)
	}
	for a := 0; a < th; a++ {
		for b := 0; b < tw; b++ {
			for i := 0; i < size; i++ {
				for j := 0; j < size; j++ {
					n[a*stride+i][b*stride+j]++
				}
			}
		}
	}
	return n
}

// TrilinearWeights are the weights of the eight corners k = 4i + 2j + l of the cell at the point
// (u, v, w) in [0, 1]^3: u or 1-u as i is 1 or 0, and likewise v with j and w with l.
func TrilinearWeights(u, v, w float64) [8]float64 {
	var ws [8]float64
	for k := 0; k < 8; k++ {
		f := func(bit int, x float64) float64 {
			if bit == 1 {
				return x
			}
			return 1 - x
		}
		ws[k] = f(k>>2&1, u) * f(k>>1&1, v) * f(k&1, w)
	}
	return ws
}

// Interval is a span of a timeline: what runs from Start to End.
type Interval struct {
	Tile, Stage int
	Start, End  int
}

// Ring is a producer/consumer schedule of k tiles through a ring of stages, as TMA and mbarriers
// run it: the producer may load tile i into stage i mod Stages once the consumer has released tile
// i - Stages (the stage's empty barrier); a load takes Load time units; the consumer computes tile
// i once its load has landed (the stage's full barrier) and the previous tile is done, taking
// Compute units, and then releases the stage.
type Ring struct {
	Loads, Computes []Interval
}

// Schedule runs tiles k tiles through stages stages; each load is issued as early as the ring
// allows.
func Schedule(tiles, stages, load, compute int) (Ring, error) {
	if tiles < 1 || stages < 1 || load < 1 || compute < 1 {
		return Ring{}, fmt.Errorf("schedule: tiles %d, stages %d, load %d and compute %d must all be at least 1", tiles, stages, load, compute)
	}
	var r Ring
	for i := 0; i < tiles; i++ {
		start := 0
		if i >= stages {
			start = r.Computes[i-stages].End // the stage is empty again
		}
		if i > 0 {
			start = max(start, r.Loads[i-1].Start) // the producer issues in order
		}
		l := Interval{Tile: i, Stage: i % stages, Start: start, End: start + load}
		r.Loads = append(r.Loads, l)
		cs := l.End
		if i > 0 {
			cs = max(cs, r.Computes[i-1].End)
		}
		r.Computes = append(r.Computes, Interval{Tile: i, Stage: i % stages, Start: cs, End: cs + compute})
	}
	return r, nil
}

// Span is when the last tile's compute ends.
func (r Ring) Span() int { return r.Computes[len(r.Computes)-1].End }

// Parity is the phase parity a consumer waits on for tile i in a ring of stages: the stage's full
// barrier completes once per pass over the ring, so pass i / stages waits for parity (i/stages) & 1.
func Parity(i, stages int) int { return (i / stages) & 1 }

// PackElems is the number of elements of elemSize bytes in the elementwise template's 16-byte pack
// (4 floats, 8 halves).
func PackElems(elemSize int) int { return 16 / elemSize }

// Slot is who handles a pack or a tail element in the packed template: the thread (its index in
// the grid) and the grid-stride loop trip.
type Slot struct{ Thread, Trip int }

// GridStride is the packed template's share of n elements over a grid of threads threads, packs
// of pack elements: pack i goes to thread i mod threads on trip i / threads (the grid-stride loop
// over the n / pack whole packs), and tail element j of the last n mod pack goes to thread j (one
// per thread of the first threads, after the loop).
func GridStride(n, pack, threads int) (packs, tail []Slot, err error) {
	if n < 0 || pack < 1 || threads < pack {
		return nil, nil, fmt.Errorf("grid stride: n %d must not be negative, the pack %d at least 1 and the threads %d at least the pack", n, pack, threads)
	}
	for i := 0; i < n/pack; i++ {
		packs = append(packs, Slot{Thread: i % threads, Trip: i / threads})
	}
	for j := 0; j < n%pack; j++ {
		tail = append(tail, Slot{Thread: j})
	}
	return packs, tail, nil
}

// Box is an axis-aligned box (x1, y1, x2, y2), x2 >= x1 and y2 >= y1 for a well-formed one.
type Box struct{ X1, Y1, X2, Y2 float64 }

// Area is the box's area, 0 when it is empty or inverted.
func (b Box) Area() float64 { return math.Max(b.X2-b.X1, 0) * math.Max(b.Y2-b.Y1, 0) }

// GIoUEps is the GIoU lesson's clamp of the union and of the enclosing area (the article's).
const GIoUEps = 1e-5

// GIoUTerms are the areas the generalized IoU of two boxes is made of: intersection I, union U,
// smallest enclosing box E, and GIoU = I/max(U, eps) - (E - U)/max(E, eps).
type GIoUTerms struct {
	Inter, Union, Enclosing, GIoU float64
	// Overlap and Hull are the intersection box (empty when the boxes miss) and the enclosing box.
	Overlap, Hull Box
}

// GIoU computes the terms of the generalized IoU of a prediction p and a target t, as the GIoU
// lesson's loss does.
func GIoU(p, t Box) GIoUTerms {
	o := Box{math.Max(p.X1, t.X1), math.Max(p.Y1, t.Y1), math.Min(p.X2, t.X2), math.Min(p.Y2, t.Y2)}
	h := Box{math.Min(p.X1, t.X1), math.Min(p.Y1, t.Y1), math.Max(p.X2, t.X2), math.Max(p.Y2, t.Y2)}
	i, e := o.Area(), h.Area()
	u := p.Area() + t.Area() - i
	return GIoUTerms{Inter: i, Union: u, Enclosing: e, GIoU: i/math.Max(u, GIoUEps) - (e-u)/math.Max(e, GIoUEps), Overlap: o, Hull: h}
}

// BoxCounts draws n images' box counts as the GIoU lesson's workload does: floor(|N(0, sigma)|),
// clipped to [0, most], from a seeded generator.
func BoxCounts(n int, sigma float64, most int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0))
	c := make([]int, n)
	for i := range c {
		c[i] = min(int(math.Floor(math.Abs(r.NormFloat64()*sigma))), most)
	}
	return c
}

// MeanBoxCount is the expected count of BoxCounts: the sum over k = 1..most of
// P(|N(0, sigma)| >= k) = erfc(k / (sigma·√2)).
func MeanBoxCount(sigma float64, most int) float64 {
	s := 0.0
	for k := 1; k <= most; k++ {
		s += math.Erfc(float64(k) / (sigma * math.Sqrt2))
	}
	return s
}

// Mistakes are notebook 09's ten mistakes, by their headings there (mistake k is Mistakes[k-1]).
var Mistakes = []string{
	"A loop that never ends",
	"Too much shared memory",
	"A read through a null pointer",
	"A write past the end",
	"Reading one past the input",
	"`__syncthreads()` inside a divergent branch",
	"A race on shared memory",
	"A block of 2048 threads",
	"A compile error",
	"The wrong kernel name",
}

// The rules a guard applies, as the suite's code has them (helpers/lab, helpers/gpu; the test checks
// them against that code): a wait's deadline is the larger of DeadlineFloorSec seconds and
// DeadlineFactor times what the original step takes; a block holds at most MaxBlockThreads threads
// and StaticSharedKiB KiB of static shared memory.
const (
	DeadlineFloorSec = 10
	DeadlineFactor   = 100
	MaxBlockThreads  = 1024
	StaticSharedKiB  = 48
)

// Guard is one stage of the path a reader's kernel takes from a notebook cell to the GPU: what the
// stage does, the mistakes of notebook 09 it catches (their numbers), those that may pass it
// unnoticed, what the cell then says, and the call of the cell that runs it (Try, gpu.CheckConfig,
// or Sanitize with its compute-sanitizer tool).
type Guard struct {
	Stage, Does string
	Catches     []int
	MayPass     []int
	Says        string
	Call        string
}

// Guards is the path in order: what Try runs (compile, assemble, load and launch, run under the
// deadline, fault, check), then the compute-sanitizer tools that Sanitize runs in a child process.
func Guards() []Guard {
	return []Guard{
		{Stage: "NVRTC compiles to PTX", Does: "no GPU needed", Catches: []int{9},
			Says: "NVRTC's log, with the source lines it names", Call: "Try"},
		{Stage: "ptxas, for the GPU's real architecture", Does: "no GPU needed", Catches: []int{2},
			Says: fmt.Sprintf("the kernel's static shared memory against the %d KiB a block may have, with the GPU's figures", StaticSharedKiB), Call: "Try"},
		{Stage: "load and launch checks", Does: "before anything is queued: every launch", Catches: []int{10, 8},
			Says: fmt.Sprintf("the kernel not found in the module (declare it extern \"C\"); the block's threads against the limit of %d", MaxBlockThreads), Call: "Try CheckConfig"},
		{Stage: "the run, under a deadline", Does: fmt.Sprintf("every wait: the larger of %d s and %dx the original step's time", DeadlineFloorSec, DeadlineFactor), Catches: []int{1},
			Says: "the kernel still running; the cell ends its own process and the driver frees the GPU", Call: "Try"},
		{Stage: "a fault", Does: "illegal address or instruction", Catches: []int{3},
			Says: "the kernel and its launch (grid, block, shared memory); the context is lost, the next cell starts fresh", Call: "Try"},
		{Stage: "the check", Does: "float64 reference, NaN-poisoned outputs", Catches: []int{5}, MayPass: []int{4, 6, 7},
			Says: "the first wrong or unwritten element", Call: "Try"},
		{Stage: "Sanitize: memcheck", Does: "every access watched", Catches: []int{4, 5},
			Says: "each access out of bounds, with its source line, thread and block", Call: `Sanitize ""`},
		{Stage: "Sanitize: racecheck", Does: "shared memory read and written", Catches: []int{7},
			Says: "the write and the read with no barrier between, with their source lines", Call: `Sanitize "racecheck"`},
		{Stage: "Sanitize: synccheck", Does: "every __syncthreads()", Catches: []int{6},
			Says: "the barrier not every thread reaches, with its source line", Call: `Sanitize "synccheck"`},
	}
}

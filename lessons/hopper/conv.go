package hopper

import (
	"fmt"
	"math/bits"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// ConvFP16 is step 7: lesson 05's deep convolution as an implicit GEMM on step 4's pipeline. x is
// copied to NHWC fp16 and the filters to a (tap, channel, filter) fp16 matrix first; then TMA
// gathers each k tile of A (one tap, 64 channels, 128 pixels) as one box of a 4-dimensional map of
// the image, its zero fill making the padding.
var ConvFP16 = Step{Name: "7 conv FP16", File: "7_conv.cu", Kernel: "hg_conv", TMA: true, BM: 128, BN: 256, Threads: 384,
	StageBytes: 2 * (128*64 + 64*256), Cluster: 2, Products: conv.FP16, Conv: true, Before: []string{"hg_conv_nhwc", "hg_conv_filters"},
	Idea: "implicit GEMM: TMA boxes of a 4-D NHWC map are A's tiles (one tap, 64 channels, 128 pixels), zero fill for the padding"}

// ConvTF32 is step 8: step 7 in TF32, with step 6's K-major filters.
var ConvTF32 = Step{Name: "8 conv TF32", File: "8_conv_tf32.cu", Kernel: "hg_conv_tf32", TMA: true, BM: 128, BN: 256, Threads: 384,
	StageBytes: 4 * (128*32 + 256*32), Cluster: 2, Products: conv.TF32, Conv: true, Before: []string{"hg_conv_nhwc_tf32", "hg_conv_filters_tf32"},
	Idea: "step 7 in TF32: NHWC float32 and the filters K-major (tap, channel), rounded to TF32, m64n256k8"}

// ConvFitted is step 7 fitted to the layer: its k tile sized to the channels (16, 32 or 64, where
// step 7 always takes 64), its n tile to the filters (128 where there are 128 or fewer, where step 7
// always takes 256) and its ring as deep as the smaller stages allow. On a layer of 16 channels and
// 128 filters step 7's tensor cores multiply 8 zeros for each useful product; this variant none.
var ConvFitted = fitted(ConvFP16)

// fitted is conv step st with its tiles fitted per layer.
func fitted(st Step) Step {
	st = st.variant("7, fitted", "step 7 with k tiles of the layer's channels (16, 32 or 64), n tiles of its filters (128 or 256), a ring up to 16 deep")
	st.Fit = true
	st.S2D = []string{"hg_conv_s2d", "hg_conv_s2d_filters"}
	return st
}

// SpaceToDepth is the stride-1, unpadded layer that a layer s of stride S equals once x is rearranged
// by hg_conv_s2d (x'[(c S + dy) S + dx][i][j] = x[c][S i + dy - P][S j + dx - P]) and the filters by
// hg_conv_s2d_filters: C S S channels, Rs = ceil(R / S) taps a side (the taps past R are zeros), and
// (OH + Rs - 1) x (OW + Rs - 1) pixels, so that its output is s's. A layer of stride 1 is itself.
func SpaceToDepth(s conv.Shape) conv.Shape {
	if s.S == 1 {
		return s
	}
	rs := gpu.CeilDiv(s.R, s.S)
	return conv.Shape{N: s.N, C: s.C * s.S * s.S, H: s.OH() + rs - 1, W: s.OW() + rs - 1, K: s.K, R: rs, S: 1, P: 0}
}

// ConvSplit is the fitted step in float32 accuracy: x and the filters split into fp16 hi and lo
// parts by the layout passes, three products on the tensor cores per k tile (Ahi Bhi in fresh
// registers added in rounded float32, Ahi Blo + Alo Bhi in a third accumulator), as step 5 does for
// the product; n tiles of 128 filters (three accumulators a thread). Checked at float32's tolerance.
var ConvSplit = splitConv(ConvFitted)

// splitConv is the fitted conv step st in float32 accuracy.
func splitConv(st Step) Step {
	st = st.variant("7, fitted, fp16x3 split", "the fitted step in float32 accuracy: x and the filters as fp16 hi + lo, three products per k tile, n tiles of 128", "SPLIT")
	st.Products = SplitDType
	return st
}

// Convs are the convolution steps the notebook walks.
var Convs = []Step{ConvFP16, ConvTF32}

// ConvVariants are builds of step 7 fitted to each layer, measured and checked beside the steps:
// FP16 and the float32-accurate split.
var ConvVariants = []Step{ConvFitted, ConvSplit}

// AllConvs are the convolution steps and their variants.
func AllConvs() []Step { return append(append([]Step{}, Convs...), ConvVariants...) }

// MaxFitStages is the deepest ring a fitted conv step takes: small k tiles (16 channels: 8 KiB a
// stage) carry little work each, so more of them must be in flight to cover TMA's latency.
const MaxFitStages = 16

// stageBarrierBytes is the static shared memory of one stage of a conv step's ring: its two
// 8-byte barriers.
const stageBarrierBytes = 16

// epilogueBytes is the static shared memory of a conv step's epilogue constants on a tile of bn
// filters: 16 bytes per pair.
func epilogueBytes(bn int) int { return 8 * bn }

// fitStatic is a fitted step's static shared memory: its ring's barriers and its epilogue's
// constants.
func fitStatic(stages, bn int) int { return stageBarrierBytes*stages + epilogueBytes(bn) }

// fitBK is the k tile of a fitted step on cp channels: of 64, 32 and 16, the one that pads the
// channels least, the larger on a tie (fewer barrier rounds).
func fitBK(cp int) int {
	best := 64
	for _, bk := range []int{32, 16} {
		if gpu.CeilDiv(cp, bk)*bk < gpu.CeilDiv(cp, best)*best {
			best = bk
		}
	}
	return best
}

// fitBN is the n tile of a fitted step on k filters: 128 or 256, the one that pads the filters
// least, 256 on a tie.
func fitBN(k int) int {
	if gpu.CeilDiv(k, 128)*128 < gpu.CeilDiv(k, 256)*256 {
		return 128
	}
	return 256
}

// ConvCase is the case of the convolution records: lesson 05's deep layer (conv.Deep).
const ConvCase = conv.CaseDeep

// ConvPlan is how a convolution step runs on a layer: the product's launch, and how its 128-pixel
// tiles and k tiles cover the layer.
type ConvPlan struct {
	Config gpu.Config
	// Cp and Kp are the channels and filters as the copies hold them, padded with zeros to TMA's
	// 16-byte rows.
	Cp, Kp int
	// A tile is BW output columns x 128/BW rows of one image; TilesW x TilesH tiles cover an image.
	BW, TilesW, TilesH int
	// CBlocks is the channel blocks of one tap, each a k tile.
	CBlocks int
	// Inner is the stride-1 layer the product runs: the layer itself, or for a strided layer its
	// SpaceToDepth form (Cp, the tiles and the copies are of Inner).
	Inner conv.Shape
	// BK and BN are the k tile (channels) and n tile (filters) of the product; Stages the depth of
	// its ring. A fitted step picks them per layer; the others take their fixed tiles.
	BK, BN, Stages int
}

// convBK is the channels of one k tile: a 128-byte row of the format.
func convBK(format string) int {
	if format == conv.TF32 {
		return 32
	}
	return 64
}

// halves is how many copies of each value the step's layout passes write: 2 for the split (hi and
// lo), 1 otherwise.
func (st Step) halves() int {
	if st.Products == SplitDType {
		return 2
	}
	return 1
}

// elemBytes is the size of one element of the step's copies of x and the filters.
func (st Step) elemBytes() int {
	if st.Products == conv.TF32 {
		return 4
	}
	return 2
}

// PlanConv returns the launch of conv step st on layer s on d, or why it cannot take it, before
// anything is compiled or launched: a stride other than 1 (for the steps), a batch or a tap count
// over grid.z's 65535 (the layout passes) or rows over grid.y's (space to depth), a GPU other than a
// Hopper, too little shared memory.
func (st Step) PlanConv(s conv.Shape, d gpu.DeviceInfo) (ConvPlan, error) {
	if err := s.Validate(); err != nil {
		return ConvPlan{}, err
	}
	if !st.Conv {
		return ConvPlan{}, fmt.Errorf("hopper %s: not a convolution step", st.Name)
	}
	if err := NeedHopper(st.Name, d); err != nil {
		return ConvPlan{}, err
	}
	if s.S != 1 && len(st.S2D) == 0 {
		return ConvPlan{}, fmt.Errorf("hopper %s: %v has stride %d; the step's TMA boxes walk the image a pixel at a time (stride 1). Lesson 05's steps and the fitted variants (space to depth) take strided layers", st.Name, s, s.S)
	}
	if s.N > 65535 {
		return ConvPlan{}, fmt.Errorf("hopper %s: batch N = %d is over the layout pass's limit of 65535 images (grid.z)", st.Name, s.N)
	}
	if h := SpaceToDepth(s).H; s.S != 1 && h > 65535 {
		return ConvPlan{}, fmt.Errorf("hopper %s: %v has %d rows after space to depth, over the pass's limit of 65535 (grid.y)", st.Name, s, h)
	}
	if s.S == 1 && s.R*s.R > 65535 {
		return ConvPlan{}, fmt.Errorf("hopper %s: a %dx%d kernel has %d taps, over the filters' pass's limit of 65535 (grid.z)", st.Name, s.R, s.R, s.R*s.R)
	}
	outer := s
	s = SpaceToDepth(s) // from here on, the stride-1 layer the product runs
	align := 16 / st.elemBytes()
	p := ConvPlan{Cp: (s.C + align - 1) / align * align, Kp: s.K, BW: 8, BK: convBK(st.Products), BN: st.BN, Stages: st.Stages(d), Inner: s}
	if st.Products != conv.TF32 {
		p.Kp = pad8(s.K) // the filters' rows are N-major: K halves each
	}
	shared := st.SharedBytes(d)
	if st.Fit {
		p.BK, p.BN = fitBK(p.Cp), fitBN(s.K)
		if st.halves() == 2 { // three accumulators a thread; hi and lo each a whole number of k tiles
			p.BN, p.Cp = 128, gpu.CeilDiv(p.Cp, p.BK)*p.BK
		}
		stage := st.halves() * st.elemBytes() * (st.BM*p.BK + p.BK*p.BN)
		p.Stages = MaxFitStages
		if lim := d.MaxSharedPerBlockOptin; lim > 0 {
			p.Stages = min(MaxFitStages, (lim-alignSlack-epilogueBytes(p.BN))/(stage+stageBarrierBytes))
		}
		if p.Stages < MinStages {
			p.Stages = 0
		}
		shared = p.Stages*stage + alignSlack
	}
	if p.Stages == 0 {
		return ConvPlan{}, gpu.Unsupported("hopper %s: needs %d bytes of shared memory per block for a %d-stage ring, over this GPU's %d", st.Name, MinStages*st.StageBytes+alignSlack, MinStages, d.MaxSharedPerBlockOptin)
	}
	for p.BW < s.OW() && p.BW < ConvPixels {
		p.BW *= 2
	}
	p.TilesW, p.TilesH = gpu.CeilDiv(s.OW(), p.BW), gpu.CeilDiv(s.OH(), ConvPixels/p.BW)
	p.CBlocks = gpu.CeilDiv(p.Cp, p.BK)
	mtiles := int64(s.N) * int64(p.TilesW) * int64(p.TilesH)
	if mtiles >= 1<<31 {
		return ConvPlan{}, fmt.Errorf("hopper %s: %v has %d pixel tiles, over the kernel's 32-bit count", st.Name, outer, mtiles)
	}
	supers := gpu.CeilDiv(int(mtiles), st.Cluster) * gpu.CeilDiv(s.K, p.BN)
	clusters := supers
	if d.SMs > 0 {
		clusters = min(supers, d.SMs/st.Cluster)
	}
	p.Config = gpu.Config{Grid: gpu.D1(st.Cluster * max(1, clusters)), Block: gpu.D1(st.Threads), SharedBytes: shared}
	return p, nil
}

// options are the compile options of conv step st under this plan on d: the step's own, and for a
// fitted step its k and n tiles and its ring's depth.
func (pl ConvPlan) options(st Step, d gpu.DeviceInfo) compile.Options {
	o := st.Options(FP16, d)
	if st.Fit {
		o.Defines = append(append([]string{}, st.Defines...), fmt.Sprintf("BK=%d", pl.BK), fmt.Sprintf("BN=%d", pl.BN), fmt.Sprintf("STAGES=%d", pl.Stages))
	}
	return o
}

// CopyBytes is the device memory of conv step st's copies of x and the filters of layer s under
// this plan.
func (pl ConvPlan) CopyBytes(st Step, s conv.Shape) int64 {
	nx, nw := pl.copyLens(st, s)
	return (nx + nw) * int64(st.elemBytes())
}

// copyLens are the elements of conv step st's copies of x (NHWC, Cp channels, twice for the split)
// and of the filters (R x R x Cp x Kp, twice for the split) of layer s under this plan (of its
// stride-1 form, for a strided layer).
func (pl ConvPlan) copyLens(st Step, s conv.Shape) (nx, nw int64) {
	if pl.Inner.N > 0 {
		s = pl.Inner
	}
	h := int64(st.halves())
	return h * int64(s.N) * int64(s.H) * int64(s.W) * int64(pl.Cp), h * int64(s.R*s.R) * int64(pl.Cp) * int64(pl.Kp)
}

// ConvPixels is the pixels of a convolution tile (the rows of the product's tile).
const ConvPixels = 128

// ConvProblem is lesson 05's layer (its inputs, sampled float64 reference and output) with what the
// convolution steps make of it first: x in NHWC and the filters in the step's layout, and their
// tensor maps.
type ConvProblem struct {
	*conv.Problem
	env    *lab.Env
	copies map[string]*convCopies // by format
	// clusters, when above 0, caps the grid at that many clusters (the tests' one-cluster walk).
	clusters int
}

// plain refuses a check against the conv's reference when an epilogue is set (the embedded
// problem's SetEpilogue: every later launch of the steps then writes y = max(conv + bias, 0) +
// bias2[k], and CheckConv and Measure, which compare with the plain conv's reference, refuse it).
func (p *ConvProblem) plain(st Step) error {
	if p.HasEpilogue() {
		return fmt.Errorf("hopper %s on %v: the problem has a ReLU or a second bias in its epilogue; lesson 05's reference is the plain conv", st.Name, p.Shape)
	}
	return nil
}

// convCopies are one format's copies of x and the filters, and their maps by k tile (a fitted
// step's boxes and swizzle follow its k tile; the copies are the same).
type convCopies struct {
	x, w gpu.DevicePointer
	free func()
	maps map[int][2]*gpu.TensorMap
}

// NewConvProblem draws lesson 05's inputs for layer s from seed and uploads them; checked is how many
// outputs a check compares (0: all), as lesson 05's problem takes it.
func NewConvProblem(env *lab.Env, s conv.Shape, seed uint64, checked int) (*ConvProblem, error) {
	p, err := conv.NewProblem(env, s, seed, checked)
	if err != nil {
		return nil, err
	}
	return ConvFrom(env, p), nil
}

// ConvFrom makes lesson 05's problem p (over its own buffers, or a caller's: conv.NewProblemOn) a
// problem of the convolution steps; Free then frees p too. Over a caller's buffers p holds no host
// inputs, so the FP16 step's range check has nothing to read: the caller's inputs must lie in fp16's
// range.
func ConvFrom(env *lab.Env, p *conv.Problem) *ConvProblem {
	return &ConvProblem{Problem: p, env: env, copies: map[string]*convCopies{}}
}

// Free releases the copies and the layer's buffers.
func (p *ConvProblem) Free() {
	for _, c := range p.copies {
		c.free()
	}
	p.copies = map[string]*convCopies{}
	p.Problem.Free()
}

// prepare allocates the step's copies of x and the filters, once per format, after checking that
// the FP16 step's inputs fit in fp16 and the copies in the device's free memory, and makes their
// tensor maps for the plan's k tile (x's map then, the filters' map).
func (p *ConvProblem) prepare(st Step, pl ConvPlan) (mapX, mapW *gpu.TensorMap, c *convCopies, err error) {
	c, err = p.copiesFor(st, pl)
	if err != nil {
		return nil, nil, nil, err
	}
	if m, ok := c.maps[pl.BK]; ok {
		return m[0], m[1], c, nil
	}
	s := pl.Inner                                   // the stride-1 layer the product reads
	bk, rr, cp := pl.BK, s.R*s.R, st.halves()*pl.Cp // cp: a pixel's row (hi, then lo)
	dtype := gpu.TensorFP16
	if st.elemBytes() == 4 {
		dtype = gpu.TensorFP32
	}
	// x: channel, x, y, image; a box is one tap's k tile: bk channels of BW x 128/BW pixels, swizzled
	// over its row (32, 64 or 128 bytes), as the kernel's descriptors of A read it.
	specX := gpu.TensorMapSpec{Base: c.x, DType: dtype, Rows: s.W, Cols: cp, BoxRows: pl.BW, BoxCols: bk, Swizzle: rowSwizzle(bk * st.elemBytes()),
		Outer: []gpu.TensorDim{{Extent: s.H, Stride: s.W * cp, Box: ConvPixels / pl.BW}, {Extent: s.N, Stride: s.H * s.W * cp, Box: 1}}}
	// FP16 filters: filter, channel, tap (N-major panels of 64 filters x bk channels); TF32: channel,
	// tap, filter (K-major, half the block's filters per box).
	specW := gpu.TensorMapSpec{Base: c.w, DType: dtype, Rows: cp, Cols: pl.Kp, BoxRows: bk, BoxCols: 64, Swizzle: gpu.Swizzle128B,
		Outer: []gpu.TensorDim{{Extent: rr, Stride: cp * pl.Kp, Box: 1}}}
	if st.Products == conv.TF32 {
		specW = gpu.TensorMapSpec{Base: c.w, DType: dtype, Rows: rr, Cols: pl.Cp, BoxRows: 1, BoxCols: bk, Swizzle: gpu.Swizzle128B,
			Outer: []gpu.TensorDim{{Extent: s.K, Stride: rr * pl.Cp, Box: pl.BN / st.Cluster}}}
	}
	if mapX, err = p.env.Session.NewTensorMap(specX); err == nil {
		mapW, err = p.env.Session.NewTensorMap(specW)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hopper %s on %v: tensor maps: %w", st.Name, s, err)
	}
	c.maps[bk] = [2]*gpu.TensorMap{mapX, mapW}
	return mapX, mapW, c, nil
}

// rowSwizzle is TMA's swizzle over a box row of the given bytes (32, 64 or 128).
func rowSwizzle(bytes int) gpu.Swizzle {
	switch bytes {
	case 32:
		return gpu.Swizzle32B
	case 64:
		return gpu.Swizzle64B
	}
	return gpu.Swizzle128B
}

// copiesFor allocates the step's copies of x and the filters once per format, after checking that
// the FP16 step's inputs fit in fp16 and the copies in the device's free memory.
func (p *ConvProblem) copiesFor(st Step, pl ConvPlan) (*convCopies, error) {
	if c, ok := p.copies[st.Products]; ok {
		return c, nil
	}
	s, eb := p.Shape, st.elemBytes()
	if eb == 2 && (!matmul.FP16Safe(p.In.X) || !matmul.FP16Safe(p.In.W)) {
		return nil, fmt.Errorf("hopper %s on %v: x or the filters hold values that are not finite or beyond fp16's range (65504); step 8 (TF32) takes them", st.Name, s)
	}
	nx, nw := pl.copyLens(st, s)
	if free, _, err := p.env.Session.MemInfo(); err == nil && pl.CopyBytes(st, s) > free {
		return nil, fmt.Errorf("hopper %s on %v: the NHWC copy and the filters need %s of device memory, %s free", st.Name, s, gpu.FormatBytes(pl.CopyBytes(st, s)), gpu.FormatBytes(free))
	}
	alloc := allocCopies[uint16]
	if eb == 4 {
		alloc = allocCopies[float32]
	}
	c, err := alloc(p.env.Session, int(nx), int(nw))
	if err != nil {
		return nil, fmt.Errorf("hopper %s on %v: %w", st.Name, s, err)
	}
	c.maps = map[int][2]*gpu.TensorMap{}
	p.copies[st.Products] = c
	return c, nil
}

// allocCopies allocates the copies of x (nx elements) and of the filters (nw) in element type T.
func allocCopies[T gpu.Elem](s *gpu.Session, nx, nw int) (*convCopies, error) {
	x, err := gpu.Alloc[T](s, nx)
	if err != nil {
		return nil, fmt.Errorf("x in NHWC: %w", err)
	}
	w, err := gpu.Alloc[T](s, nw)
	if err != nil {
		x.Free()
		return nil, fmt.Errorf("the filters: %w", err)
	}
	return &convCopies{x: x, w: w, free: func() { x.Free(); w.Free() }}, nil
}

// checkStep is st as lesson 05's problem checks and records it: its format and that format's
// tolerance.
func checkStep(st Step) conv.Step {
	return conv.Step{Name: st.Name, File: st.File, Kernel: st.Kernel, DType: st.Products, Tol: conv.Tol(st.Products), Idea: st.Idea}
}

// Launcher plans conv step st on the layer (refusing what it cannot take before anything runs),
// compiles it (code, when not empty, replaces its source), makes the copies and maps, and returns a
// function that queues the NHWC pass, the filters' pass and the product, with the product's launch.
func (p *ConvProblem) Launcher(st Step, code string) (func() error, conv.Launch, *lab.Program, error) {
	passes, product, l, prog, err := p.launches(st, code)
	if err != nil {
		return nil, l, prog, err
	}
	return then(passes, product), l, prog, nil
}

// then is a launch function that queues first, then second.
func then(first, second func() error) func() error {
	return func() error {
		if err := first(); err != nil {
			return err
		}
		return second()
	}
}

// launches is Launcher's work, with the layout passes and the product as two functions.
func (p *ConvProblem) launches(st Step, code string) (passes, product func() error, l conv.Launch, prog *lab.Program, err error) {
	d := p.env.Session.Device
	pl, err := st.PlanConv(p.Shape, d)
	l = conv.Launch{Kernel: st.Kernel, Config: pl.Config}
	if err != nil {
		return
	}
	src, err := st.Source(code)
	if err != nil {
		return
	}
	names := append(append([]string{st.Kernel}, st.Before...), st.S2D...)
	if prog, err = p.env.BuildWith(src, pl.options(st, d), names...); err != nil {
		return
	}
	ks := make([]*gpu.Kernel, len(names))
	for i, name := range names {
		if ks[i], err = prog.Kernel(name); err != nil {
			return
		}
	}
	mapX, mapW, c, err := p.prepare(st, pl)
	if err != nil {
		return
	}
	if l.Config, err = fitClusters(st, ks[0], pl.Config, p.clusters); err != nil {
		return
	}
	y, err := p.Output()
	if err != nil {
		return
	}
	s, outer := pl.Inner, p.Shape // the product's stride-1 layer, and the layer
	l.Note = fmt.Sprintf("tiles of %d x %d pixels, %d-stage TMA ring", pl.BW, ConvPixels/pl.BW, pl.Stages)
	if st.Fit {
		l.Note += fmt.Sprintf(", k tiles of %d channels, n tiles of %d filters", pl.BK, pl.BN)
	}
	if outer.S != 1 {
		l.Note += fmt.Sprintf(", stride %d by space to depth: %d channels, %d x %d taps", outer.S, s.C, s.R, s.R)
	}
	x, w, bias := p.Buffers()
	hw := s.H * s.W
	var nhwc gpu.Config
	nhwcArgs := []any{x, c.x, int32(s.C), int32(hw), int32(pl.Cp)}
	if st.Products == conv.TF32 { // 32 x 32 tiles, a float a thread
		nhwc = gpu.Config{Grid: gpu.Dim{X: gpu.CeilDiv(hw, 32), Y: gpu.CeilDiv(pl.Cp, 32), Z: s.N}, Block: gpu.D2(32, 8)}
	} else { // blocks of ct channels x 2048 / ct pixels, 8 channels a thread
		ct := 32 // the kernel takes 8, 16 or 32; a few channels fill its 8- or 16-channel tiles
		if pl.Cp <= 16 {
			ct = pl.Cp
		}
		nhwc = gpu.Config{Grid: gpu.Dim{X: gpu.CeilDiv(hw, 2048/ct), Y: gpu.CeilDiv(pl.Cp, ct), Z: s.N}, Block: gpu.D1(256)}
		nhwcArgs = append(nhwcArgs, int32(ct))
	}
	filters := gpu.Config{Grid: gpu.Dim{X: gpu.CeilDiv(pl.Kp, 32), Y: gpu.CeilDiv(pl.Cp, 32), Z: s.R * s.R}, Block: gpu.D2(32, 8)}
	filterArgs := []any{w, c.w, int32(s.K), int32(s.C), int32(s.R * s.R), int32(pl.Cp), int32(pl.Kp)}
	if st.Products == conv.TF32 { // one block per filter and 32 channels, taps by its rows
		filters.Grid = gpu.D2(s.K, gpu.CeilDiv(pl.Cp, 32))
		filterArgs = filterArgs[:6]
	}
	bwLog2 := bits.TrailingZeros(uint(pl.BW)) // BW is a power of two
	bias2, relu := p.EpilogueArgs()
	args := []any{mapX, mapW, bias, y, int32(s.N), int32(s.K), int32(s.OH()), int32(s.OW()), int32(s.R), int32(s.P),
		int32(pl.CBlocks), int32(bwLog2), int32(pl.TilesW), int32(pl.TilesH), bias2, relu}
	passes = func() error {
		if err := ks[1].Launch(nhwc, nhwcArgs...); err != nil {
			return err
		}
		return ks[2].Launch(filters, filterArgs...)
	}
	if outer.S != 1 { // space to depth: x' by rows of pixels, 8 channels a thread; w' 1-D, grid-stride
		_, nw := pl.copyLens(Step{}, s)
		gx := gpu.Config{Grid: gpu.Dim{X: gpu.CeilDiv(s.W*pl.Cp/8, 256), Y: s.H, Z: s.N}, Block: gpu.D1(256)}
		gw := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, int(nw), 256, 4)), Block: gpu.D1(256)}
		passes = func() error {
			if err := ks[len(names)-2].Launch(gx, x, c.x, int32(outer.C), int32(outer.H), int32(outer.W), int32(outer.S), int32(outer.P),
				int32(s.H), int32(s.W), int32(pl.Cp)); err != nil {
				return err
			}
			return ks[len(names)-1].Launch(gw, w, c.w, int32(outer.K), int32(outer.C), int32(outer.R), int32(outer.S), int32(s.R),
				int32(pl.Cp), int32(pl.Kp), nw)
		}
	}
	product = func() error { return ks[0].Launch(l.Config, args...) }
	return passes, product, l, prog, nil
}

// ProductAlone is the suffix of the record of a conv step's product timed without its layout
// passes (what a network that keeps its activations in NHWC and its filters converted would pay).
const ProductAlone = ", product alone"

// Measure checks conv step st on the layer (every output scanned for NaN, the sample against the
// float64 reference at lesson 05's tolerance of the format), then times that same run, the layout
// passes included, under caseName; and then the product alone, recorded as st.Name+ProductAlone.
func (p *ConvProblem) Measure(caseName string, st Step, code string) ([]record.Record, error) {
	cs := checkStep(st)
	if err := p.plain(st); err != nil {
		return []record.Record{{Case: caseName, Variant: st.Name, Kind: "kernel", DType: st.Products, Shape: p.Shape.Short(), Tol: cs.Tol.Name}}, err
	}
	passes, product, l, _, err := p.launches(st, code)
	if err != nil {
		return []record.Record{{Case: caseName, Variant: st.Name, Kind: "kernel", DType: st.Products, Shape: p.Shape.Short(), Tol: cs.Tol.Name}}, err
	}
	whole, err := p.MeasureRun(cs, then(passes, product), l, caseName, st.Name)
	if err != nil {
		return []record.Record{whole}, err
	}
	whole.Note += "; the time includes the NHWC and filter passes"
	alone := whole
	alone.Variant, alone.Note = st.Name+ProductAlone, "the product kernel alone, on the copies the checked run made; "+l.Note
	alone, err = p.env.Measure(alone, conv.Work(p.Shape), product)
	return []record.Record{whole, alone}, err
}

// CheckConv runs conv step st once on a NaN-poisoned output and compares it with the float64
// reference. code, when not empty, replaces the step's source.
func (p *ConvProblem) CheckConv(st Step, code string) (check.Result, error) {
	if err := p.plain(st); err != nil {
		return check.Result{}, err
	}
	run, l, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	res, _, err := p.CheckRun(checkStep(st), run, l)
	return res, err
}

// ReportConv is the compile report of conv step st at its launch on this layer.
func (p *ConvProblem) ReportConv(st Step) (record.KernelReport, error) {
	_, l, prog, err := p.Launcher(st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, l.Config.Block.Count(), l.Config.SharedBytes), nil
}

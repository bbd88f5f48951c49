package hopper

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Every GPU but a Hopper is refused, naming the need and what runs instead; a Hopper takes the
// lesson's shape with every step.
func TestOnlyHopperRunsTheSteps(t *testing.T) {
	for _, key := range gpu.ProfileKeys() {
		p, _ := gpu.LookupProfile(key)
		d := p.Device()
		for _, c := range StepChecks(d) {
			if d.CC() == 90 && !c.Runs() {
				t.Errorf("%s: %s refused on a Hopper: %s", key, c.Step, c.Why())
			}
			if d.CC() != 90 && (c.Runs() || !strings.Contains(c.Why(), "9.0")) {
				t.Errorf("%s (cc %d): %s not refused with its need: %q", key, d.CC(), c.Step, c.Why())
			}
		}
	}
}

// Plans refuse what a step cannot take, naming the limit, and size the ring from the GPU.
func TestPlans(t *testing.T) {
	h100, _ := gpu.LookupProfile("h100")
	d := h100.Device()
	if _, err := Steps[0].Plan(matmul.Shape{M: 100, N: 128, K: 64}, d); err == nil || !strings.Contains(err.Error(), "M % 64 == 0") {
		t.Errorf("step 1 on M = 100: %v", err)
	}
	if _, err := Steps[1].Plan(matmul.Shape{M: 100, N: 100, K: 30}, d); err == nil || !strings.Contains(err.Error(), "K must be a multiple of 8") {
		t.Errorf("step 2 on K = 30: %v", err)
	}
	for _, st := range Steps[1:] {
		cfg, err := st.Plan(matmul.Shape{M: 1000, N: 3000, K: 776}, d)
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if cfg.SharedBytes > d.MaxSharedPerBlockOptin || cfg.SharedBytes < MinStages*st.StageBytes+st.StoreBytes {
			t.Errorf("%s: %d bytes of shared memory on %d", st.Name, cfg.SharedBytes, d.MaxSharedPerBlockOptin)
		}
	}
	for _, s := range matmul.Awkward {
		if _, err := Split.Plan(s, d); err != nil {
			t.Errorf("the split (which pads) refuses %v: %v", s, err)
		}
	}
	if _, err := TF32.Plan(matmul.Shape{M: 8, N: 8, K: 6}, d); err == nil {
		t.Error("TF32 took K = 6 (A's rows 24 bytes apart)")
	}
	if n := Persistent.Stages(d); n != 3 {
		t.Errorf("step 4 runs %d stages on an H100 (3 x 48 KiB + 64 KiB of staging fit in 227 KiB, 4 do not)", n)
	}
	if cfg, _ := Persistent.Plan(Article, d); cfg.Grid.X != d.SMs-d.SMs%2 {
		t.Errorf("step 4's grid is %v on %d SMs, want a cluster of 2 per 2 SMs", cfg.Grid, d.SMs)
	}
	if _, err := Steps[0].Plan(matmul.Shape{M: 0, N: 8, K: 8}, d); err == nil {
		t.Error("an empty product was planned")
	}
}

// The split cuts K into slices only where C's super-tiles would leave most clusters idle, each
// slice deep enough to pay for its pass, and sizes the grid and the workspace by them.
func TestSplitSlicesOfK(t *testing.T) {
	h100, _ := gpu.LookupProfile("h100")
	d := h100.Device()
	clusters := d.SMs / Split.Cluster
	for _, c := range []struct {
		s      matmul.Shape
		slices int
	}{
		{matmul.Shape{M: 256, N: 256, K: 524288}, clusters / 2},        // KernelBench's problem 6: 2 super-tiles
		{matmul.Shape{M: 200, N: 130, K: 70000}, clusters / 2},         // ragged, the same 2 super-tiles
		{matmul.Shape{M: 64, N: 64, K: 65536}, min(clusters, 1024/16)}, // one super-tile, 1024 k tiles
		{matmul.Shape{M: 256, N: 256, K: 1024}, 1},                     // 16 k tiles: one slice's worth
		{matmul.Shape{M: 256, N: 256, K: 2048}, 2},                     // 32 k tiles: two slices of 16
		{Article, 1}, // 512 super-tiles
		{matmul.Shape{M: 2048, N: 1024, K: 65536}, 1}, // 64 super-tiles: half the clusters or more
	} {
		got := Split.Slices(c.s, d)
		if got != c.slices {
			t.Errorf("%v on %d SMs: %d slices of K, want %d", c.s, d.SMs, got, c.slices)
		}
		cfg, err := Split.Plan(c.s, d)
		if err != nil {
			t.Fatalf("%v: %v", c.s, err)
		}
		supers := gpu.CeilDiv(c.s.N, Split.BN) * gpu.CeilDiv(c.s.M, 2*Split.BM)
		if want := Split.Cluster * min(clusters, supers*c.slices); cfg.Grid.X != want {
			t.Errorf("%v: grid %v, want %d blocks", c.s, cfg.Grid, want)
		}
		if tiles := gpu.CeilDiv(pad8(c.s.K), 64); got > 1 && tiles/got < SliceMinTiles {
			t.Errorf("%v: %d slices of %d k tiles leave a slice under %d", c.s, got, tiles, SliceMinTiles)
		}
		want := int64(0)
		if got > 1 {
			want = int64(got) * int64(c.s.M) * int64(c.s.N) * 4
		}
		if b := Split.WorkspaceBytes(c.s, d); b != want {
			t.Errorf("%v: workspace %d bytes, want %d", c.s, b, want)
		}
	}
	if n := TF32.Slices(matmul.Shape{M: 256, N: 256, K: 524288}, d); n != 1 {
		t.Errorf("TF32 has no slices of K, got %d", n)
	}
	if n := Split.Slices(matmul.Shape{M: 256, N: 256, K: 524288}, gpu.DeviceInfo{}); n != 1 {
		t.Errorf("without an SM count the split keeps one slice, got %d", n)
	}
}

// The need line makes every file Hopper-only: compiling for anything but compute_90a is refused
// before NVRTC runs (compile.PTX calls Fits first).
func TestEveryFileIsHopperOnly(t *testing.T) {
	for _, f := range kh.Kernels.List() {
		src, _ := kh.Source(f)
		if n := compile.Required(src.Code, nil); n.CC != 90 || !n.Exact {
			t.Errorf("%s declares %+v, want compute capability 9.0a", f, n)
		}
		for _, arch := range []string{"compute_90", "compute_100", "compute_120"} {
			if err := compile.Fits(src, compile.Options{Arch: arch}); !errors.As(err, new(*compile.NeedError)) {
				t.Errorf("%s for %s: %v, want a refusal naming the need", f, arch, err)
			}
		}
	}
}

// Where the NVRTC is CUDA 12.0 or newer, every step compiles for compute_90a in its formats (the
// no-GPU mode's compile check); with an older NVRTC the refusal names the version needed.
func TestStepsCompile(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	h100, _ := gpu.LookupProfile("h100")
	for _, st := range AllSteps() {
		src, err := st.Source("")
		if err != nil {
			t.Fatal(err)
		}
		dtypes := DTypes
		if st.Products != "" { // float32 in and out: one build
			dtypes = []string{FP16}
		}
		for _, dtype := range dtypes {
			_, err := compile.PTX(src, st.Options(dtype, h100.Device()))
			if err != nil && strings.Contains(err.Error(), "came with CUDA 12.0") {
				t.Skipf("this NVRTC cannot compile compute_90a (the GPU machine's CUDA 13 does): %v", err)
			}
			if err != nil {
				t.Errorf("%s %s: %v", st.Name, dtype, err)
			}
		}
	}
}

// The swizzle is a permutation of every row's chunks, and of every column's rows: no two of a
// chunk's 8 rows share a column of banks.
func TestSwizzleIsConflictFree(t *testing.T) {
	for r := 0; r < 8; r++ {
		seenRow, seenCol := map[int]bool{}, map[int]bool{}
		for c := 0; c < 8; c++ {
			seenRow[SwizzledChunk(r, c)] = true
			seenCol[SwizzledChunk(c, r)] = true
		}
		if len(seenRow) != 8 || len(seenCol) != 8 {
			t.Fatalf("row or column %d is not a permutation", r)
		}
	}
	p, err := SwizzleFigure()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "swizzle.svg")
	if err := charts.Save(p, path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "c7") {
		t.Error("the swizzle figure lacks its chunk labels")
	}
}

// The tolerance is the 16-bit format's, with a floor that grows with K.
func TestTolerance(t *testing.T) {
	a, b := Tolerance(FP16, 4096), Tolerance(BF16, 4096)
	if a.RelL2 >= b.RelL2 || a.Floor <= Tolerance(FP16, 64).Floor {
		t.Errorf("fp16 %+v, bf16 %+v", a, b)
	}
}

// Each exercise's starter is its step's file with the kernel renamed and one piece taken out; the
// solution is the same file with the piece in place.
func TestExercisesAreTheStepsWithAHole(t *testing.T) {
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		if x.Starter == "" || x.Starter == sol || !strings.Contains(x.Starter, "TODO") {
			t.Errorf("%s: the starter is empty, the solution, or says nothing to do", x.Title)
		}
		if !strings.Contains(x.Starter, x.Kernel+"(") || !strings.Contains(sol, x.Kernel+"(") {
			t.Errorf("%s: the kernel is not named %s", x.Title, x.Kernel)
		}
	}
}

// The convolution steps' plans: the deep layer's tiles of 64 x 2 pixels, the channel blocks of
// each format, zero-padded channels and filters, and the refusals (stride, a GPU other than Hopper).
func TestConvPlans(t *testing.T) {
	h100, _ := gpu.LookupProfile("h100")
	d := h100.Device()
	for _, c := range []struct {
		st      Step
		cblocks int
	}{{ConvFP16, 4}, {ConvTF32, 8}} {
		pl, err := c.st.PlanConv(conv.Deep, d)
		if err != nil {
			t.Fatalf("%s on the deep layer: %v", c.st.Name, err)
		}
		if pl.BW != 64 || pl.TilesW != 1 || pl.TilesH != 28 || pl.CBlocks != c.cblocks || pl.Cp != 256 || pl.Kp != 256 {
			t.Errorf("%s on the deep layer: %+v", c.st.Name, pl)
		}
		if pl.Config.Grid.X != 2*(d.SMs/2) || pl.Config.SharedBytes > d.MaxSharedPerBlockOptin {
			t.Errorf("%s: grid %v, %d bytes of shared memory", c.st.Name, pl.Config.Grid, pl.Config.SharedBytes)
		}
	}
	odd := conv.Shape{N: 1, C: 3, H: 5, W: 300, K: 5, R: 3, S: 1, P: 1}
	pl, err := ConvFP16.PlanConv(odd, d)
	if err != nil || pl.Cp != 8 || pl.Kp != 8 || pl.BW != 128 || pl.TilesW != 3 || pl.TilesH != 5 {
		t.Errorf("FP16 on %v: %+v %v", odd, pl, err)
	}
	if pl, err := ConvTF32.PlanConv(odd, d); err != nil || pl.Cp != 4 || pl.Kp != 5 {
		t.Errorf("TF32 on %v: %+v %v", odd, pl, err)
	}
	// The fitted step: the deep layer as step 7 takes it; KernelBench's problem 63 (16 channels, 128
	// filters) with k tiles of 16 and n tiles of 128, a ring of MaxFitStages; the k tile that pads
	// the channels least.
	if pl, err := ConvFitted.PlanConv(conv.Deep, d); err != nil || pl.BK != 64 || pl.BN != 256 || pl.Stages != 4 || pl.CBlocks != 4 || pl.Config.SharedBytes != ConvFP16.SharedBytes(d) {
		t.Errorf("fitted on the deep layer: %+v %v", pl, err)
	}
	l63 := conv.Shape{N: 16, C: 16, H: 1024, W: 1024, K: 128, R: 3, S: 1, P: 0}
	if pl, err := ConvFitted.PlanConv(l63, d); err != nil || pl.BK != 16 || pl.BN != 128 || pl.Stages != MaxFitStages || pl.CBlocks != 1 ||
		pl.BW != 128 || pl.TilesW != 8 || pl.Config.SharedBytes != MaxFitStages*2*(128*16+16*128)+1024 {
		t.Errorf("fitted on %v: %+v %v", l63, pl, err)
	}
	for _, c := range []struct{ c, bk, blocks int }{{3, 16, 1}, {20, 32, 1}, {48, 16, 3}, {64, 64, 1}, {96, 32, 3}, {130, 16, 9}, {256, 64, 4}} {
		s := conv.Shape{N: 1, C: c.c, H: 8, W: 8, K: 300, R: 3, S: 1, P: 1}
		pl, err := ConvFitted.PlanConv(s, d)
		if err != nil || pl.BK != c.bk || pl.CBlocks != c.blocks || pl.BN != 128 || pl.Config.SharedBytes+fitStatic(pl.Stages, pl.BN) > d.MaxSharedPerBlockOptin {
			t.Errorf("fitted on %d channels: %+v %v", c.c, pl, err)
		}
	}
	// The split: n tiles of 128 always, hi and lo each a whole number of k tiles, stages twice as
	// large, copies twice step 7's.
	if pl, err := ConvSplit.PlanConv(l63, d); err != nil || pl.BK != 16 || pl.BN != 128 || pl.Cp != 16 || pl.Stages != 14 || pl.Config.SharedBytes != 14*16384+1024 {
		t.Errorf("split on %v: %+v %v", l63, pl, err)
	}
	if pl, err := ConvSplit.PlanConv(conv.Deep, d); err != nil || pl.BK != 64 || pl.BN != 128 || pl.Stages != 3 || pl.CBlocks != 4 {
		t.Errorf("split on the deep layer: %+v %v", pl, err)
	}
	c20 := conv.Shape{N: 1, C: 20, H: 5, W: 130, K: 300, R: 3, S: 1, P: 1}
	sp, err := ConvSplit.PlanConv(c20, d)
	fp, err2 := ConvFitted.PlanConv(c20, d)
	if err != nil || err2 != nil || sp.BK != 32 || sp.Cp != 32 || sp.CBlocks != 1 || fp.Cp != 24 ||
		sp.CopyBytes(ConvSplit, c20) != 2*2*(5*130*32+9*32*304) || fp.CopyBytes(ConvFitted, c20) != 2*(5*130*24+9*24*304) {
		t.Errorf("split and fitted on %v: %+v %v / %+v %v", c20, sp, err, fp, err2)
	}
	// AlexNet's first layer by space to depth: 48 channels of 3 x 3 taps over 57 x 57 pixels, its
	// 55 x 55 output in tiles of 64 x 2; stride 1 is itself.
	if pl, err := ConvFitted.PlanConv(conv.AlexNet, d); err != nil || pl.Inner != (conv.Shape{N: 100, C: 48, H: 57, W: 57, K: 96, R: 3, S: 1, P: 0}) ||
		pl.Inner.OH() != conv.AlexNet.OH() || pl.BK != 16 || pl.CBlocks != 3 || pl.BN != 128 || pl.BW != 64 || pl.TilesH != 28 {
		t.Errorf("fitted on AlexNet's layer: %+v %v", pl, err)
	}
	if got := SpaceToDepth(conv.Deep); got != conv.Deep {
		t.Errorf("space to depth of a stride-1 layer: %v", got)
	}
	for _, s := range []conv.Shape{conv.AlexNet, {N: 1, C: 5, H: 16, W: 18, K: 130, R: 3, S: 2, P: 1}, {N: 2, C: 16, H: 15, W: 17, K: 8, R: 5, S: 3, P: 0}} {
		if in := SpaceToDepth(s); in.OH() != s.OH() || in.OW() != s.OW() || in.Validate() != nil || in.R*s.S < s.R {
			t.Errorf("space to depth of %v: %v, output %dx%d", s, in, in.OH(), in.OW())
		}
	}
	strided := conv.AlexNet
	if _, err := ConvFP16.PlanConv(strided, d); err == nil || !strings.Contains(err.Error(), "stride 4") {
		t.Errorf("a strided layer: %v", err)
	}
	a100, _ := gpu.LookupProfile("a100-80")
	if _, err := ConvTF32.PlanConv(conv.Deep, a100.Device()); err == nil || !strings.Contains(err.Error(), "9.0") {
		t.Errorf("an A100: %v", err)
	}
}

// Space to depth on the CPU, with the index arithmetic of hg_conv_s2d and hg_conv_s2d_filters: the
// stride-1 layer over x' and w' gives the strided layer's every output (float64 sums of the same
// products, so equal to rounding).
func TestSpaceToDepthIsTheLayer(t *testing.T) {
	for i, s := range []conv.Shape{{N: 2, C: 3, H: 39, W: 35, K: 4, R: 11, S: 4, P: 2}, {N: 1, C: 5, H: 16, W: 18, K: 3, R: 3, S: 2, P: 1},
		{N: 2, C: 2, H: 15, W: 17, K: 2, R: 5, S: 3, P: 0}} {
		in := conv.NewInputs(s, uint64(40+i))
		ss := SpaceToDepth(s)
		xs := make([]float32, ss.XLen())
		for e := range xs { // hg_conv_s2d, with Cp = C S S
			cq, pix := e%ss.C, e/ss.C
			j, row, n := pix%ss.W, (pix/ss.W)%ss.H, pix/(ss.W*ss.H)
			c, dy, dx := cq/(s.S*s.S), (cq/s.S)%s.S, cq%s.S
			h, w := s.S*row+dy-s.P, s.S*j+dx-s.P
			if h >= 0 && h < s.H && w >= 0 && w < s.W {
				xs[((n*ss.C+cq)*ss.H+row)*ss.W+j] = in.X[((n*s.C+c)*s.H+h)*s.W+w] // NCHW for ConvAt
			}
		}
		ws := make([]float32, ss.WLen())
		for e := range ws { // hg_conv_s2d_filters, with Kp = K
			k, rest := e%s.K, e/s.K
			cq, tap := rest%ss.C, rest/ss.C
			c, dy, dx := cq/(s.S*s.S), (cq/s.S)%s.S, cq%s.S
			r, q := s.S*(tap/ss.R)+dy, s.S*(tap%ss.R)+dx
			if r < s.R && q < s.R {
				ws[((k*ss.C+cq)*ss.R+tap/ss.R)*ss.R+tap%ss.R] = in.W[((k*s.C+c)*s.R+r)*s.R+q]
			}
		}
		inner := conv.Inputs{X: xs, W: ws, B: in.B}
		for n := 0; n < s.N; n++ {
			for k := 0; k < s.K; k++ {
				for y := 0; y < s.OH(); y++ {
					for x := 0; x < s.OW(); x++ {
						want, got := conv.ConvAt(s, in, n, k, y, x), conv.ConvAt(ss, inner, n, k, y, x)
						if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
							t.Fatalf("%v at (%d, %d, %d, %d): %g through space to depth, %g", s, n, k, y, x, got, want)
						}
					}
				}
			}
		}
	}
}

package matmul

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

func TestReferenceMatchesDefinition(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {7, 5, 33}, {3, 130, 9}, {64, 64, 64}} {
		if err := ProveReference(s, 5); err != nil {
			t.Error(err)
		}
	}
}

func TestSampleOf(t *testing.T) {
	if s := SampleOf(Shape{10, 20, 30}, 1, 1, 5, 1); len(s.Idx) != 200 {
		t.Errorf("a small product should be checked everywhere, got %d elements", len(s.Idx))
	}
	s := SampleOf(Article, 4, 4, 512, 1)
	seen := map[int]bool{}
	rows, cols := map[int]int{}, map[int]int{}
	for i, v := range s.Idx {
		if seen[v] || (i > 0 && v < s.Idx[i-1]) || v < 0 || v >= Article.M*Article.N {
			t.Fatalf("sample index %d at %d: not sorted, unique and in range", v, i)
		}
		seen[v] = true
		rows[v/Article.N]++
		cols[v%Article.N]++
	}
	full := 0
	for _, n := range rows {
		if n >= Article.N {
			full++
		}
	}
	if full != 4 || rows[0] < Article.N || rows[Article.M-1] < Article.N || cols[0] < Article.M {
		t.Errorf("expected 4 full rows including the first and last and the first column: %d full rows", full)
	}
}

func TestBadShapesAreRefusedWithTheReason(t *testing.T) {
	if _, err := ShapeOf(64, 32, 31, 64); err == nil || !strings.Contains(err.Error(), "inner dimensions differ") {
		t.Errorf("mismatched inner dimensions: %v", err)
	}
	for _, s := range []Shape{{0, 4, 4}, {4, 0, 4}, {4, 4, 0}, {-1, 4, 4}} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%v: %v", s, err)
		}
	}
	if err := (Shape{50000, 50000, 8}).Validate(); err == nil || !strings.Contains(err.Error(), "2147483647") {
		t.Errorf("over the index limit: %v", err)
	}
	if err := checkFits(Shape{40000, 40000, 40000}, false, 16<<30, 16<<30, "a 16 GiB GPU"); err == nil || !strings.Contains(err.Error(), "over the 16.00 GiB free") {
		t.Errorf("over device memory: %v", err)
	}
	if err := checkFits(Shape{4096, 4096, 4096}, true, 16<<30, 16<<30, "x"); err != nil {
		t.Errorf("4096^3 fits in 16 GiB: %v", err)
	}
	if got := DeviceBytes(Shape{4096, 4096, 4096}, true); got != 3*64<<20+4*32<<20 {
		t.Errorf("device bytes of the split at 4096^3: %d", got)
	}
}

var h100 = gpu.DeviceInfo{Name: "H100", Major: 9, SMs: 132, MaxSharedPerBlockOptin: 227 << 10, MaxThreadsPerBlock: 1024}

func TestPlansRefuseWhatTheyCannotTake(t *testing.T) {
	for _, st := range append(append([]Step{}, Steps...), Variants...) {
		if err := st.Validate(Article, h100); err != nil {
			t.Errorf("%s refuses the article's shape: %v", st.Name, err)
		}
		err := st.Validate(NonSquare, h100)
		if st.Name[0] <= '3' { // naive, coalesced, shared take any shape
			if err != nil {
				t.Errorf("%s refuses %v: %v", st.Name, NonSquare, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "not a multiple of its") {
			t.Errorf("%s on %v: %v", st.Name, NonSquare, err)
		}
	}
	old := gpu.DeviceInfo{Major: 7, Minor: 5, MaxSharedPerBlockOptin: 64 << 10}
	for _, n := range []string{"7 warp tile", "8 tensor core tf32", "9 fp16x3 split"} {
		st, _ := StepByName(n)
		if err := st.Validate(Article, old); err == nil || !strings.Contains(err.Error(), "compute capability 8.0") {
			t.Errorf("%s on a Turing GPU: %v", n, err)
		}
	}
	// 99 KiB a block (8.6, 8.9): two stages instead of three; 64 KiB: not even two, refused (the GPU's limit).
	st, _ := StepByName("9")
	if cfg, err := st.Plan(Article, gpu.DeviceInfo{Major: 8, Minor: 6, MaxSharedPerBlockOptin: 99 << 10}); err != nil || cfg.SharedBytes != 2*SplitStage {
		t.Errorf("step 9 with 99 KiB of shared memory: %+v, %v", cfg, err)
	}
	small := gpu.DeviceInfo{Major: 8, MaxSharedPerBlockOptin: 64 << 10}
	if err := st.Validate(Article, small); !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("step 9 with 64 KiB of shared memory: %v", err)
	}
}

func TestPick(t *testing.T) {
	if st := Pick(Article, h100, true, true); st.Name != "9 fp16x3 split" {
		t.Errorf("4096^3: picked %s", st.Name)
	}
	if st := Pick(Article, h100, true, false); st.Name != "8b 3xTF32 split" {
		t.Errorf("4096^3 with inputs over fp16's range: picked %s", st.Name)
	}
	if st := Pick(NonSquare, h100, true, true); st.Name != AnyShape.Name {
		t.Errorf("%v: picked %s", NonSquare, st.Name)
	}
	if st := Pick(NonSquare, t4, true, true); st.Name != Fallback.Name {
		t.Errorf("%v on a T4 (no cp.async): picked %s", NonSquare, st.Name)
	}
	// Off step 7's K % 32 (and where only steps 4 to 6 would take the shape), the any-shape step.
	for s, want := range map[Shape]string{{4097, 4097, 1}: ThinK.Name, {4097, 64, 3}: ThinK.Name, {1, 1, 7}: ThinK.Name,
		{4097, 4097, 8}: AnyShape.Name, {513, 129, 1025}: AnyShape.Name, {4097, 64, 16}: AnyShape.Name, {255, 255, 255}: AnyShape.Name,
		{128, 128, 8}: AnyShape.Name, {128, 128, 16}: AnyShape.Name, {4096, 4096, 4112}: AnyShape.Name, {4096, 4096, 4128}: "9 fp16x3 split",
		{4095, 4095, 4095}: AnyShape.Name, NonSquare: AnyShape.Name} {
		if st := Pick(s, h100, true, true); st.Name != want {
			t.Errorf("%v on an H100: picked %s, want %s", s, st.Name, want)
		}
	}
	for s, want := range map[Shape]string{{4097, 4097, 1}: ThinK.Name, {4097, 64, 3}: ThinK.Name, {513, 129, 1025}: Fallback.Name,
		{4097, 64, 16}: Fallback.Name, {128, 128, 16}: "6 vectorized", {128, 128, 8}: "6 vectorized"} {
		if st := Pick(s, t4, true, true); st.Name != want {
			t.Errorf("%v on a T4: picked %s, want %s", s, st.Name, want)
		}
	}
}

var t4 = gpu.DeviceInfo{Name: "T4", Major: 7, Minor: 5, SMs: 40, MaxSharedPerBlockOptin: 64 << 10, MaxThreadsPerBlock: 1024}

// The thin-K step refuses K >= SmallK naming the limit, takes K = 1..7 on every GPU, and launches
// blocks of 32 columns x 8 rows, within one wave of ThinKBlocksPerSM blocks per SM where the SM
// count is known.
func TestThinKPlan(t *testing.T) {
	for _, k := range []int{SmallK, 9, 4096} {
		err := ThinK.Validate(Shape{M: 64, N: 64, K: k}, h100)
		if err == nil || !strings.Contains(err.Error(), "K < 8") || !strings.Contains(err.Error(), "SmallK") {
			t.Errorf("K = %d: %v", k, err)
		}
	}
	for _, c := range []struct {
		s    Shape
		d    gpu.DeviceInfo
		want gpu.Dim
	}{{Shape{4097, 4097, 1}, h100, gpu.D2(129, 4)}, {Shape{4097, 64, 3}, h100, gpu.D2(2, 264)}, {Shape{4097, 4097, 7}, t4, gpu.D2(129, 1)},
		{Shape{1, 1, 1}, h100, gpu.D2(1, 1)}, {Shape{4097, 4097, 1}, gpu.DeviceInfo{Major: 9}, gpu.D2(129, 65)}, {Shape{1 << 20, 1, 2}, h100, gpu.D2(1, 528)}} {
		cfg, err := ThinK.Plan(c.s, c.d)
		if err != nil || cfg.Grid != c.want || cfg.Block != gpu.D2(32, 8) || cfg.SharedBytes != 0 {
			t.Errorf("%v on %q: %+v, %v; want grid %v", c.s, c.d.Name, cfg, err, c.want)
		}
		if c.d.SMs > 0 && cfg.Grid.Count() > ThinKBlocksPerSM*c.d.SMs {
			t.Errorf("%v: %d blocks, over one wave of %d", c.s, cfg.Grid.Count(), ThinKBlocksPerSM*c.d.SMs)
		}
	}
	if st, err := StepByName("7c"); err != nil || st.Name != ThinK.Name {
		t.Errorf("StepByName(7c): %v, %v", st.Name, err)
	}
}

// The any-shape step splits K only where its tiles leave SMs idle, and never into an empty slice
// (on a GPU of the H100's size without clusters; with them, the slices become a cluster of 8, 4 or
// 2: TestAnyShapeTiles).
func TestSplitKSlices(t *testing.T) {
	noClusters := h100
	noClusters.Major = 8
	for _, c := range []struct {
		s    Shape
		want int
	}{{NonSquare, 1}, {Shape{4095, 4095, 4095}, 1}, {Shape{255, 255, 255}, 8}, {Shape{513, 129, 1025}, 11}, {Shape{4097, 64, 16}, 1},
		{Shape{67, 45, 33}, 1}, {Shape{256, 128, 160}, 5}, {Shape{200, 100, 300}, 7}} {
		n := SplitKSlices(c.s, noClusters)
		if n != c.want {
			t.Errorf("%v: %d slices, want %d", c.s, n, c.want)
		}
		tiles := (c.s.K + AnyShapeBK - 1) / AnyShapeBK
		per := (tiles + n - 1) / n
		if (n-1)*per >= tiles {
			t.Errorf("%v: slice %d of %d would be empty (%d tiles, %d per slice)", c.s, n, n, tiles, per)
		}
		cfg, err := AnyShape.Plan(c.s, noClusters)
		if err != nil || cfg.Grid.Z != n {
			t.Errorf("%v: plan %+v, %v", c.s, cfg, err)
		}
	}
	if l := PlanAnyShape(Shape{255, 255, 255}, gpu.DeviceInfo{Major: 9}); l != (AnyShapeLaunch{Tile{64, 128}, 1, 1}) {
		t.Errorf("unknown SM count: %+v", l)
	}
}

// The any-shape step keeps 64 x 128 tiles where they give every SM a block and takes the small tile
// with fewer outputs past the edges where they do not (64 x 64 on a tie), its slices of K sized for
// the GPU's SMs, and on compute capability 9.0 the slices of a small tile become a cluster; its
// plan, its build For the shape and that build's plan agree; the workspace stays under two waves of
// tiles, and a cluster needs none.
func TestAnyShapeTiles(t *testing.T) {
	l4 := gpu.DeviceInfo{Name: "L4", Major: 8, Minor: 9, SMs: 58, MaxSharedPerBlockOptin: 99 << 10, MaxThreadsPerBlock: 1024}
	for _, c := range []struct {
		s    Shape
		d    gpu.DeviceInfo
		want AnyShapeLaunch
	}{{NonSquare, h100, AnyShapeLaunch{Tile{64, 128}, 1, 1}}, {Shape{4095, 4095, 4095}, h100, AnyShapeLaunch{Tile{64, 128}, 1, 1}},
		{Shape{513, 129, 1025}, h100, AnyShapeLaunch{Tile{64, 64}, 8, 8}}, {Shape{255, 255, 255}, h100, AnyShapeLaunch{Tile{64, 64}, 8, 8}},
		{Shape{4097, 64, 16}, h100, AnyShapeLaunch{Tile{64, 64}, 1, 1}}, {Shape{4097, 4097, 8}, h100, AnyShapeLaunch{Tile{64, 128}, 1, 1}},
		{Shape{1024, 1100, 64}, h100, AnyShapeLaunch{Tile{64, 128}, 1, 1}}, {Shape{512, 1088, 64}, h100, AnyShapeLaunch{Tile{64, 64}, 2, 2}},
		{Shape{512, 1090, 64}, h100, AnyShapeLaunch{Tile{64, 64}, 2, 2}}, {NonSquare, l4, AnyShapeLaunch{Tile{64, 128}, 1, 1}},
		{Shape{513, 129, 1025}, l4, AnyShapeLaunch{Tile{64, 32}, 6, 1}}, {Shape{255, 255, 255}, l4, AnyShapeLaunch{Tile{64, 64}, 8, 1}}} {
		l := PlanAnyShape(c.s, c.d)
		if l != c.want {
			t.Errorf("%v on %s: %+v, want %+v", c.s, c.d.Name, l, c.want)
		}
		cfg, err := AnyShape.Plan(c.s, c.d)
		b := AnyShape.For(c.s, c.d)
		bcfg, berr := b.Plan(c.s, c.d)
		defines := l.Tile.Defines()
		if l.Cluster > 1 {
			defines = append(defines, fmt.Sprintf("CLUSTER_K=%d", l.Cluster))
		}
		if err != nil || berr != nil || cfg != bcfg || cfg.Grid.Z != l.Slices || cfg.Block.X != l.Tile.Threads() ||
			strings.Join(b.Defines, " ") != strings.Join(defines, " ") {
			t.Errorf("%v: plan %+v (%v), build %q %v plans %+v (%v)", c.s, cfg, err, b.Name, b.Defines, bcfg, berr)
		}
		if w := l.WorkspaceBytes(c.s); w > 2*int64(l.Tile.Wave(c.d))*int64(l.Tile.BM*l.Tile.BN)*4 || (w == 0) != (l.Slices == 1 || l.Cluster > 1) {
			t.Errorf("%v: a workspace of %d bytes", c.s, w)
		}
	}
	if AnyShape.For(NonSquare, h100).Defines != nil || AnyShapeTiles[0].Defines() != nil || AnyShapeTiles[0] != (Tile{64, 128}) {
		t.Error("the plan's large tile, 64 x 128, is not the file's default build")
	}
	if d := (Tile{128, 128}).Defines(); strings.Join(d, " ") != "BM=128 BN=128" {
		t.Errorf("the 128 x 128 build's defines: %v", d)
	}
	if err := AnyShape.Validate(NonSquare, t4); err == nil || !strings.Contains(err.Error(), "compute capability 8.0") {
		t.Errorf("the any-shape step on a T4: %v", err)
	}
	// A fixed number of slices (the tuning test's) is rounded so that none is empty.
	cfg, err := AnyShapeWith(Tile{64, 64}, 30).Plan(Shape{513, 129, 1025}, h100)
	if err != nil || cfg.Grid != (gpu.Dim{X: 3, Y: 9, Z: 22}) || cfg.Block != gpu.D1(64) {
		t.Errorf("64 x 64 tiles in 30 slices of 65 k tiles: %+v, %v", cfg, err)
	}
}

// The any-shape kernel adds split-K slices up in two ways: mm_sum_slices over a workspace, or, built
// with CLUSTER_K (compute capability 9.0), the blocks of a cluster through distributed shared
// memory; only tiles whose outputs fit in their stages take the cluster build, and its plan refuses
// other GPUs and tiles, naming the need.
func TestAnyShapeSplitK(t *testing.T) {
	src, err := km.Source(anyShapeFile)
	if err != nil {
		t.Fatal(err)
	}
	if ks := compile.Kernels(src.Code); strings.Join(ks, " ") != "mm_warptile_any mm_sum_slices mm_copy_rows" {
		t.Errorf("%s's kernels: %v", anyShapeFile, ks)
	}
	for _, tile := range Tiles {
		if tile.Clusters() != (tile.BM*tile.BN <= 4608 && tile.BM == 64 && tile.BN <= 64) {
			t.Errorf("%v: Clusters() = %v", tile, tile.Clusters())
		}
	}
	st := AnyShapeClustered(Tile{64, 32}, 8)
	if err := st.Validate(Shape{513, 129, 1025}, gpu.DeviceInfo{Name: "A100", Major: 8, SMs: 108}); err == nil || !strings.Contains(err.Error(), "compute capability 9.0") {
		t.Errorf("the cluster build on an A100: %v", err)
	}
	if err := AnyShapeClustered(Tile{64, 128}, 8).Validate(Shape{513, 129, 1025}, h100); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("a cluster of 64 x 128 tiles: %v", err)
	}
	if cfg, err := st.Plan(Shape{513, 129, 1025}, h100); err != nil || cfg.Grid != (gpu.Dim{X: 5, Y: 9, Z: 8}) || st.clusterK() != 8 || AnyShape.clusterK() != 1 {
		t.Errorf("the cluster build's plan: %+v, %v (CLUSTER_K %d)", cfg, err, st.clusterK())
	}
	if _, err := compile.Version(); err != nil {
		t.Skip("no NVRTC:", err)
	}
	for _, tile := range Tiles {
		if _, err := compile.PTX(src, compile.Options{Arch: "compute_80", Defines: tile.Defines()}); err != nil {
			t.Errorf("%v: %v", tile, err)
		}
		if !tile.Clusters() {
			continue
		}
		for _, c := range []int{2, 4, 8} {
			defs := append(tile.Defines(), fmt.Sprintf("CLUSTER_K=%d", c))
			res, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: defs})
			if err != nil {
				t.Errorf("%v %v: %v", tile, defs, err)
				continue
			}
			for _, want := range []string{"barrier.cluster", "ld.shared::cluster.v4.f32", ".reqnctapercluster 1, 1, " + fmt.Sprint(c)} {
				if !strings.Contains(res.PTX, want) {
					t.Errorf("%v %v: no %s in the PTX", tile, defs, want)
				}
			}
			if _, err := compile.PTX(src, compile.Options{Arch: "compute_80", Defines: defs}); err == nil {
				t.Errorf("%v %v compiled for compute_80", tile, defs)
			}
		}
	}
}

// Step 7's builds: the zero value is the ladder's step (k tiles 32 deep, 3 stages where they fit,
// 2 where only 2 do, refused naming the limit where not even 2 do); a build whose stages are over
// 48 KiB asks for them as dynamic shared memory, and its source declares them so (and static
// otherwise); the plans refuse K off the build's k depth.
func TestWarpTileBuilds(t *testing.T) {
	st := WarpTileBuild{}.Step()
	if st.Name != Steps[6].Name || st.Defines != nil || Steps[6].Defines != nil || Steps[6].StageBytes != WarpTileStage || WarpTileStage != 32768 {
		t.Errorf("the default build is %q %v, the ladder's step 7 %q %v (%d bytes a stage)", st.Name, st.Defines, Steps[6].Name, Steps[6].Defines, Steps[6].StageBytes)
	}
	builds := WarpTileBuilds()
	if len(builds) != 9 {
		t.Errorf("%d tuning builds", len(builds))
	}
	src, err := km.Source("7_warptile.cu")
	if err != nil {
		t.Fatal(err)
	}
	a10 := gpu.DeviceInfo{Major: 8, Minor: 6, SMs: 72, MaxSharedPerBlockOptin: 99 << 10}
	kib64 := gpu.DeviceInfo{Major: 8, SMs: 40, MaxSharedPerBlockOptin: 64 << 10}
	for _, d := range []gpu.DeviceInfo{h100, a10, kib64} {
		for _, b := range append([]WarpTileBuild{{}}, builds...) {
			if n := b.StagesOn(d); n == 0 || n*b.StageBytes() > d.MaxSharedPerBlockOptin {
				continue // a depth over the GPU's shared memory: refused, below
			}
			checkWarpTileBuild(t, src, b, d)
		}
	}
	// The ladder's step 7: 3 stages (96 KiB) on an H100 and an A10, 2 (64 KiB, built with STAGES=2)
	// where a block has 64 KiB.
	for _, c := range []struct {
		d      gpu.DeviceInfo
		stages int
		defs   string
	}{{h100, 3, ""}, {a10, 3, ""}, {kib64, 2, "STAGES=2"}} {
		cfg, err := Steps[6].Plan(Article, c.d)
		if err != nil || cfg.SharedBytes != c.stages*WarpTileStage || Steps[6].StagesOn(c.d) != c.stages ||
			strings.Join(Steps[6].DefinesOn(c.d), " ") != c.defs || !strings.Contains(Steps[6].DepthNote(c.d), fmt.Sprintf("%d-stage", c.stages)) {
			t.Errorf("step 7 on %+v: %+v, %v, defines %v, %q", c.d, cfg, err, Steps[6].DefinesOn(c.d), Steps[6].DepthNote(c.d))
		}
	}
	small := gpu.DeviceInfo{Major: 8, SMs: 40, MaxSharedPerBlockOptin: 48 << 10}
	if err := Steps[6].Validate(Article, small); !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "shared memory") ||
		!strings.Contains(err.Error(), "2-stage") {
		t.Errorf("step 7 with 48 KiB of shared memory a block: %v", err)
	}
	deep := WarpTileBuild{Stages: 4, BK: 32}
	if err := deep.Step().Validate(Article, a10); !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("%s with 99 KiB of shared memory: %v", deep.Name(), err)
	}
	for _, k := range []int{16, 48, 4112} {
		if err := Steps[6].Validate(Shape{128, 128, k}, h100); err == nil || !strings.Contains(err.Error(), "K % 32 == 0") {
			t.Errorf("step 7 on K = %d: %v", k, err)
		}
	}
	if err := (WarpTileBuild{Stages: 2, BK: 16}).Step().Validate(Shape{128, 128, 48}, h100); err != nil {
		t.Errorf("BK = 16 on K = 48: %v", err)
	}
	if n := (WarpTileBuild{Stages: 2, BK: 16}).Name(); n != "7 warp tile [STAGES=2 BK=16]" {
		t.Errorf("a build's name: %s", n)
	}
}

// checkWarpTileBuild compiles one build of step 7 as it runs on d and checks its shared memory
// against its plan.
func checkWarpTileBuild(t *testing.T, src compile.Source, b WarpTileBuild, d gpu.DeviceInfo) {
	t.Helper()
	st := b.Step()
	cfg, err := st.Plan(Article, d)
	n := b.StagesOn(d)
	if err != nil || cfg.SharedBytes != b.SharedBytes(n) {
		t.Fatalf("%s: plan %+v, %v", b.Name(), cfg, err)
	}
	res, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: st.DefinesOn(d)})
	if err != nil {
		t.Fatalf("%s: %v", b.Name(), err)
	}
	dynamic := strings.Contains(res.PTX, ".extern .shared")
	static := compile.StaticSharedBytes(res.PTX)
	stages := n * b.StageBytes()
	if dynamic != (cfg.SharedBytes > 0) || (dynamic && static != 0) || (!dynamic && static != stages) {
		t.Errorf("%s (%d stages): dynamic shared memory %v, static %d bytes; the plan asks for %d dynamic (stages %d bytes)",
			b.Name(), n, dynamic, static, cfg.SharedBytes, stages)
	}
}

func TestTolerancesHoldTheModelAndCatchHalfPrecision(t *testing.T) {
	for _, K := range []int{256, 4096, 8192} {
		for _, d := range []string{"float32", "tf32", "3xtf32", "fp16x3", "bf16x3"} {
			tol := Tolerance(d, K)
			abs, rel := ErrorModel(d, K)
			if rel*3 > tol.RelL2 {
				t.Errorf("%s K=%d: the model's expected rel L2 %.2e is not 3x inside the bound %.2e", d, K, rel, tol.RelL2)
			}
			if tol.Abs < 10*abs*(1-1e-12) {
				t.Errorf("%s K=%d: absolute bound %.2e below 10 sigma %.2e", d, K, tol.Abs, 10*abs)
			}
		}
		// A half-precision product must fail the float32 check: its expected error is over the bound.
		if _, rel := ErrorModel("fp16", K); rel < 10*Tolerance("float32", K).RelL2 {
			t.Errorf("K=%d: an fp16 product (%.1e) would pass the float32 bound", K, rel)
		}
	}
	if tol := Tolerance("float32", 4096); math.Abs(tol.Abs-3.32e-4) > 1e-6 || tol.RelL2 != 1e-5 {
		t.Errorf("float32 at K=4096: %+v", tol)
	}
}

func TestBankConflictCounts(t *testing.T) {
	want := map[string]string{
		"A tile load As[(trow*8+i)*8 + k] (i = k = 0)":                                "2-way",
		"A tile store As[(a_c+0)*128 + a_r] (transposed)":                             "2-way",
		"A tile store As[(a_c+0)*132 + a_r] (transposed, padded)":                     "none",
		"A tile load As[(wm+lm+8i)*32 + kc .. +3] (a float4)":                         "8-way",
		"A tile load As[(wm+lm+8i)*32 + 4*((kc/4) ^ key) .. +3] (a float4, swizzled)": "none",
		"B tile load Bs[kk*128 + wn + 16j + 4ln .. +3] (a float4)":                    "none",
		"B fragment Bs[(ks+t)*136 + wn + 8j + g]":                                     "none",
		"B fragment Bs[(ks+t)*128 + wn + 8j + g] (no padding)":                        "4-way",
	}
	seen := 0
	for _, row := range BankTable().Rows {
		if w, ok := want[row[1]]; ok {
			seen++
			if row[5] != w {
				t.Errorf("%s %s: %s, want %s", row[0], row[1], row[5], w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d accesses checked are in the table", seen, len(want))
	}
	if got, ideal := Wavefronts([]int{0, 32, 64, 0}, 1); got != 3 || ideal != 1 {
		t.Errorf("three words in bank 0: %d wavefronts (ideal %d)", got, ideal)
	}
}

func TestAllClose(t *testing.T) {
	want := []float64{1, -2, 100}
	if !AllClose([]float64{1.005, -2.02, 100.5}, want, 1e-2, 1e-2) {
		t.Error("within atol + rtol|want| was refused")
	}
	if AllClose([]float64{1.05, -2, 100}, want, 1e-2, 1e-2) || AllClose([]float64{math.NaN(), -2, 100}, want, 1e-2, 1e-2) {
		t.Error("outside the tolerance, or NaN, passed")
	}
}

// synthetic is a run with made-up figures, to test the tables' arithmetic (never shown as results).
func synthetic() *record.Run {
	run := &record.Run{Lesson: ID, Receipt: record.Receipt{CopyGBps: 3000, PeakGFLOPS: 60000}}
	add := func(c, v, d, kind string, ms, rel float64, ok bool) {
		run.Add(record.Record{Case: c, Variant: v, DType: d, Kind: kind, MedianMS: ms, RelL2: rel, Correct: ok, GFLOPs: Article.FLOPs() / ms / 1e6})
	}
	add("matmul", TorchFP32, "float32", "baseline", 2.0, 1e-6, true)
	add("matmul", TorchTF32, "tf32", "baseline", 0.4, 3e-4, true)
	add("matmul", "7 warp tile", "float32", "kernel", 2.4, 9e-7, true)
	add("matmul", "8 tensor core tf32", "tf32", "kernel", 0.8, 3e-4, true)
	add("matmul", "8b 3xTF32 split", "3xtf32", "kernel", 1.5, 2e-6, true)
	add("matmul", "9 fp16x3 split", "fp16x3", "kernel", 0.9, 3e-6, true)
	return run
}

func TestTargetsAndFastPFromTheRunsOwnFigures(t *testing.T) {
	run := synthetic()
	got := map[string]string{}
	for _, row := range Targets(run).Rows {
		got[row[0]] = row[2]
	}
	want := map[string]string{
		"best CUDA-core fp32 step >= 80% of cuBLAS fp32's speed":          "yes", // 2.0/2.4 = 83%
		"float32-accurate tensor-core step >= 2x faster than cuBLAS fp32": "yes", // 9: 2.2x
		"... with rel L2 error <= 4x cuBLAS fp32's":                       "yes", // 3e-6 <= 4e-6
		"TF32 step >= 70% of cuBLAS TF32's speed":                         "no",  // 50%
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	fp := FastP(run, []float64{0, 1, 2, 3})
	if fp[0] != 1 || fp[1] != 0.75 || fp[2] != 0.5 || fp[3] != 0 {
		t.Errorf("fast_p at 0, 1, 2, 3: %v", fp)
	}
	if len(Tables(run)) < 8 {
		t.Error("missing tables")
	}
	if figs, err := Figures(run); err != nil || len(figs) < 4 {
		t.Errorf("figures: %d, %v", len(figs), err)
	}
}

func TestKernelBenchTableReadsItsRecords(t *testing.T) {
	run := &record.Run{Lesson: ID}
	for _, r := range KBRecords([]KBResult{
		{Step: Zeros, KBPassed: []int{0, 5}, OursPassed: 0, WorstRelL2: 1, Trials: 5, Tol: "fp32"},
		{Step: Steps[6], KBPassed: []int{5, 5}, OursPassed: 5, WorstRelL2: 1e-6, Trials: 5, Tol: "fp32"},
		{Step: Steps[7], KBPassed: []int{0, 5}, OursPassed: 5, WorstRelL2: 3e-4, Trials: 5, Tol: "tf32"},
	}) {
		run.Add(r)
	}
	rows := KernelBenchTable(run).Rows
	want := [][]string{
		{"0 / 5 pass", "5 / 5 pass", "FAIL at fp32: 0 / 5 (1.0e+00)", "WRONG KERNEL LET THROUGH by allclose 1e-2"},
		{"5 / 5 pass", "5 / 5 pass", "pass at fp32: 5 / 5 (1.0e-06)", "both agree"},
		{"0 / 5 pass", "5 / 5 pass", "pass at tf32: 5 / 5 (3.0e-04)", "correct for its precision, rejected by allclose at scale 1"},
	}
	for i, w := range want {
		if got := rows[i][2:]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
}

func TestSweepFigureOrdersSizes(t *testing.T) {
	run := synthetic()
	for _, n := range []int64{4096, 256, 1024} {
		run.Add(record.Record{Case: "sweep", Variant: TorchFP32, Size: n, MedianMS: 1, GFLOPs: float64(n)})
	}
	figs, err := Figures(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if f.Name == "03_sweep" {
			return
		}
	}
	t.Error("no sweep figure")
}

// The autograd op's backward (dA = dC·Bᵀ, dB = Aᵀ·dC through the op's own multiply) matches finite
// differences, and its forward matches the host MatMul of helpers/autograd.
func TestAutogradOpOnCPU(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {5, 7, 3}, {33, 17, 65}} {
		res, err := GradCheck(CPUOp, s, 11)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
	s := Shape{4, 6, 5}
	a, b := Inputs(s, 2)
	A, B := autograd.Param("A", float64s(a), s.M, s.K), autograd.Param("B", float64s(b), s.K, s.N)
	tp := autograd.NewTape()
	got, err := tp.Apply(CPUOp, A, B)
	if err != nil {
		t.Fatal(err)
	}
	want, err := autograd.NewTape().Apply(autograd.MatMul, A, B)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := got.Values()
	w, _ := want.Values()
	if r := check.Compare(g, w, check.FP32); !r.OK {
		t.Errorf("forward against autograd.MatMul: %v", r.Err())
	}
	if _, err := autograd.NewTape().Apply(CPUOp, A, A); err == nil || !strings.Contains(err.Error(), "inner dimensions") {
		t.Errorf("A·A with A 4 x 5: %v", err)
	}
}

// noTranspose is Op with a wrong backward: dA = dC·B instead of dC·Bᵀ (the shapes agree when square).
type noTranspose struct{ Op }

func (o noTranspose) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	grads, err := o.Op.Backward(ctx, g)
	if err != nil || grads[0] == nil {
		return grads, err
	}
	b, _ := float32s(ctx.Saved()[1])
	gv, _ := float32s(g)
	n := ctx.Saved()[1].Shape[1]
	da, err := o.Mul(gv, n, n, b, n, n)
	grads[0] = autograd.New("dA", float64s(da), n, n)
	return grads, err
}

func TestGradCheckCatchesAMissingTranspose(t *testing.T) {
	s := Shape{6, 6, 6}
	a, b := Inputs(s, 3)
	w, _ := Inputs(Shape{M: 6, N: 1, K: 6}, 4)
	W := autograd.New("W", float64s(w), 6, 6)
	loss := func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		c, err := tp.Apply(noTranspose{CPUOp}, in[0], in[1])
		if err != nil {
			return nil, err
		}
		wc, err := tp.Apply(autograd.Mul, W, c)
		if err != nil {
			return nil, err
		}
		return tp.Apply(autograd.Sum, wc)
	}
	res, err := autograd.GradCheck(loss, []*autograd.Tensor{autograd.Param("A", float64s(a), 6, 6), autograd.Param("B", float64s(b), 6, 6)}, autograd.Float32Check)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err() == nil {
		t.Error("a backward without the transpose passed the gradient check")
	}
}

// The zeros kernel and the skipped-column kernel (a column left at zero, or unwritten and NaN)
// fail the suite's float32 check with an absolute floor for tiny references derived from the
// products' sizes (check.SumFloor over K terms), at both KernelBench scales: a floor never opens
// the hole allclose has. A float32 accumulation of the same products passes it.
func TestWrongKernelsFailUnderAFloor(t *testing.T) {
	s := Shape{M: 32, N: 24, K: 1024}
	for _, scale := range KBScales {
		a, b := Inputs(s, 3)
		for i := range a {
			a[i] *= scale
		}
		for i := range b {
			b[i] *= scale
		}
		idx := make([]int, s.M*s.N)
		for i := range idx {
			idx[i] = i
		}
		want := Reference(s, a, b, idx)
		rms := func(v []float32) float64 {
			var q float64
			for _, x := range v {
				q += float64(x) * float64(x)
			}
			return math.Sqrt(q / float64(len(v)))
		}
		tol := check.FP32.WithFloor(check.SumFloor(check.U32, s.K, rms(a)*rms(b)), "K products")
		f32 := make([]float64, len(want))
		for i := 0; i < s.M; i++ {
			for j := 0; j < s.N; j++ {
				var acc float32
				for k := 0; k < s.K; k++ {
					acc += a[i*s.K+k] * b[k*s.N+j]
				}
				f32[i*s.N+j] = float64(acc)
			}
		}
		if r := check.Compare(f32, want, tol); !r.OK {
			t.Errorf("scale %g: a float32 accumulation failed %s: %v", scale, tol.Name, r.Err())
		}
		zeroCol, nanCol := append([]float64{}, f32...), append([]float64{}, f32...)
		for i := 0; i < s.M; i++ {
			zeroCol[i*s.N+s.N-1], nanCol[i*s.N+s.N-1] = 0, math.NaN()
		}
		for name, got := range map[string][]float64{"zeros": make([]float64, len(want)), "last column zero": zeroCol, "last column unwritten": nanCol} {
			if r := check.Compare(got, want, tol); r.OK {
				t.Errorf("scale %g: %s passed %s: %v", scale, name, tol.Name, r)
			}
		}
	}
}

// Multiply pads only large products whose rows are not aligned.
func TestPadded(t *testing.T) {
	for s, want := range map[Shape]bool{NonSquare: false, {4095, 4095, 4095}: true, {4096, 4097, 4096}: true, Article: false, {255, 255, 255}: false, {513, 129, 1025}: false} {
		if Padded(s) != want {
			t.Errorf("Padded(%v) = %v, want %v", s, !want, want)
		}
	}
}

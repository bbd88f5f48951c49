package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Arch is the architecture every step is compiled for: compute_90a, Hopper with its
// architecture-specific instructions (wgmma, setmaxnreg), which no other GPU runs.
const Arch = "compute_90a"

// The 16-bit formats of the steps' inputs and outputs; products are summed in float32.
const (
	FP16 = "fp16"
	BF16 = "bf16"
)

// DTypes are the formats every step is built for.
var DTypes = []string{FP16, BF16}

// Step is one rung of the ladder: its file and kernel, its tile and launch, and a Plan that refuses
// a shape or a GPU it cannot take, naming the limit, before anything is compiled or launched.
type Step struct {
	Name   string // "3 warp specialized"
	File   string // in kernels/hopper
	Kernel string
	Idea   string // one line: what changed
	// TMA steps take tensor maps of A and B (boxes of BM x 64 and 64 x 64) instead of pointers.
	TMA bool
	// BM x BN is the block's tile of C; Threads its block size.
	BM, BN, Threads int
	// StageBytes is the shared memory of one pipeline stage (0: the step has no ring); the plan
	// picks the deepest ring up to MaxStages that fits the GPU, with 1 KiB to align the swizzle atoms.
	StageBytes int
	// Cluster is the number of blocks per thread block cluster (0: no clusters); such a step is
	// persistent: its grid is the clusters that fit at once.
	Cluster int
	// StoreBytes is the shared memory of the staging buffers a step stores C through with TMA (its
	// kernel then takes a tensor map of C with 64 x 64 boxes instead of C's pointer); 0 for a step
	// that stores from registers.
	StoreBytes int
	// Defines are build options beyond the format and the ring depth (the variants' changes).
	Defines []string
	// Products is the format of a step that takes float32 A and B and returns float32 C: "fp16x3"
	// (the split) or "tf32"; "" for the 16-bit steps.
	Products string
	// KMult and NMult are what K and N must be multiples of, for the 16-byte row strides TMA needs;
	// 0 means 8 (16-bit rows read as they are). A step whose first kernel copies its operands into
	// padded rows needs less: the split 1 and 1, TF32 4 (A is read as it is) and 1.
	KMult, NMult int
	// Conv marks a convolution step (planned on a conv.Shape by PlanConv); Before are kernels of its
	// file that its launch runs first, in order (its layout passes).
	Conv   bool
	Before []string
	// After are kernels of its file that a step's launch may run after its main kernel, in order
	// (the split's sum of K's slices).
	After []string
	// Fit marks a convolution step whose k tile follows the layer's channels and whose n tile
	// follows its filters: PlanConv picks BK, BN and the ring's depth per layer (ConvPlan).
	Fit bool
	// S2D are the space-to-depth passes (kernels of its file) with which a fitted conv step takes a
	// strided layer as its equivalent stride-1 layer (SpaceToDepth); none for a step of stride 1 only.
	S2D []string
}

// headline is the step's launch on d at the lesson's shape for it: 4096^3, or lesson 05's deep layer
// for a convolution.
func (st Step) headline(d gpu.DeviceInfo) (gpu.Config, error) {
	if st.Conv {
		pl, err := st.PlanConv(conv.Deep, d)
		return pl.Config, err
	}
	return st.Plan(Article, d)
}

// mults are the step's KMult and NMult, 8 where not set.
func (st Step) mults() (k, n int) {
	k, n = st.KMult, st.NMult
	if k == 0 {
		k = 8
	}
	if n == 0 {
		n = 8
	}
	return k, n
}

// Pipeline depths of the ring: the deepest that fits, from MaxStages down to MinStages.
const (
	MaxStages = 4
	MinStages = 2
	// alignSlack is the dynamic shared memory added so the ring can start on a 1024-byte boundary.
	alignSlack = 1024
)

// Steps are the ladder, in order.
var Steps = []Step{
	{Name: "1 wgmma", File: "1_wgmma.cu", Kernel: "hg_wgmma", BM: 64, BN: 128, Threads: 128,
		Idea: "one warpgroup, wgmma m64n128k16 from swizzled shared memory; threads copy the tiles"},
	{Name: "2 TMA ring", File: "2_tma.cu", Kernel: "hg_tma", TMA: true, BM: 128, BN: 128, Threads: 128, StageBytes: 2 * (128*64 + 64*128),
		Idea: "TMA copies the tiles into a 4-stage ring with mbarriers; 128 x 128 tiles; any shape"},
	{Name: "3 warp specialized", File: "3_specialized.cu", Kernel: "hg_specialized", TMA: true, BM: 128, BN: 256, Threads: 384, StageBytes: 2 * (128*64 + 64*256),
		Idea: "a producer warpgroup and two consumers (setmaxnreg), 128 x 256 tiles, no block barrier in the loop"},
	Persistent,
}

// Persistent is step 4, which the lesson also measures with some of its changes undone (Variants).
var Persistent = Step{Name: "4 clusters, persistent", File: "4_persistent.cu", Kernel: "hg_persistent", TMA: true, BM: 128, BN: 256, Threads: 384,
	StageBytes: 2 * (128*64 + 64*256), Cluster: 2, StoreBytes: 2 * 2 * 64 * 256,
	Idea: "clusters of 2 share B by TMA multicast; persistent blocks walk the tiles in L2-friendly bands; epilogue by TMA store"}

// Variants are builds of step 4 with one of its changes undone or tuned otherwise, measured beside
// it.
var Variants = []Step{
	Persistent.variant("4, no multicast", "each block loads its whole B tile: clusters without sharing", "MULTICAST=0"),
	Persistent.variant("4, cluster-scope release", "the remote arrivals on the peer's empty barriers release at cluster scope", "CLUSTER_RELEASE"),
	Persistent.variant("4, bands of 4", "super-tiles walked in bands of 4 rows instead of 8", "GROUP=4"),
	Persistent.variant("4, bands of 16", "super-tiles walked in bands of 16 rows instead of 8", "GROUP=16"),
}

// variant is st built with extra defines, under another name.
func (st Step) variant(name, idea string, defines ...string) Step {
	st.Name, st.Idea, st.Defines = name, idea, append(append([]string{}, st.Defines...), defines...)
	return st
}

// StepByName finds a step by its name or its number ("3").
func StepByName(name string) (Step, error) {
	for _, s := range AllSteps() {
		if s.Name == name || len(s.Name) > len(name) && s.Name[:len(name)] == name && s.Name[len(name)] == ' ' {
			return s, nil
		}
	}
	return Step{}, fmt.Errorf("hopper: no step %q", name)
}

// AllSteps are every step and variant of the lesson: the 16-bit ladder, its variants, the float32-in
// products and the convolutions.
func AllSteps() []Step {
	return append(append(append(append([]Step{}, Steps...), Variants...), Accurate...), AllConvs()...)
}

// NeedHopper refuses every GPU but compute capability 9.0 (H100, H200, GH200): wgmma, setmaxnreg and
// the compute_90a code they need exist nowhere else. Blackwell (10.x, 12.x) has other tensor-core
// instructions (tcgen05, or mma.sync on its consumer parts), so a newer GPU is refused too.
func NeedHopper(step string, d gpu.DeviceInfo) error {
	if d.Major == 0 || d.CC() == 90 {
		return nil
	}
	return gpu.Unsupported("hopper %s: needs compute capability 9.0 exactly (wgmma and setmaxnreg, compiled for compute_90a: Hopper only); this GPU is %s. Lesson 03's tensor-core steps (mma.sync) run on it instead",
		step, d.ComputeCapability())
}

// Stages is the ring depth the step runs with on d: MaxStages where that fits in a block's shared
// memory, fewer where only fewer do, 0 where not even MinStages fit; MaxStages for a step without
// a ring or a device whose limit is not known.
func (st Step) Stages(d gpu.DeviceInfo) int {
	lim := d.MaxSharedPerBlockOptin
	if st.StageBytes == 0 || lim == 0 {
		return MaxStages
	}
	for n := MaxStages; n >= MinStages; n-- {
		if n*st.StageBytes+st.StoreBytes+alignSlack <= lim {
			return n
		}
	}
	return 0
}

// SharedBytes is the dynamic shared memory of the step's launch on d.
func (st Step) SharedBytes(d gpu.DeviceInfo) int {
	if st.StageBytes == 0 {
		return 0
	}
	return st.Stages(d)*st.StageBytes + st.StoreBytes + alignSlack
}

// Plan returns the launch for shape s on d, or why the step cannot take it. A persistent step's
// grid here is its upper bound, one cluster per Cluster SMs; the launcher cuts it to the clusters
// the driver says fit at once.
func (st Step) Plan(s matmul.Shape, d gpu.DeviceInfo) (gpu.Config, error) {
	if err := s.Validate(); err != nil {
		return gpu.Config{}, err
	}
	if err := NeedHopper(st.Name, d); err != nil {
		return gpu.Config{}, err
	}
	if !st.TMA {
		if s.M%st.BM != 0 || s.N%st.BN != 0 || s.K%64 != 0 {
			return gpu.Config{}, fmt.Errorf("hopper %s: %v is not a multiple of its %d x %d x 64 tile (needs M %% %d == 0, N %% %d == 0, K %% 64 == 0); the TMA steps take any shape",
				st.Name, s, st.BM, st.BN, st.BM, st.BN)
		}
		return gpu.Config{Grid: gpu.D2(s.N/st.BN, s.M/st.BM), Block: gpu.D1(st.Threads)}, nil
	}
	if km, nm := st.mults(); s.K%km != 0 || s.N%nm != 0 {
		return gpu.Config{}, fmt.Errorf("hopper %s: %v: K must be a multiple of %d and N of %d, so that the rows TMA reads are a multiple of 16 bytes apart (pad the rows with zeros)",
			st.Name, s, km, nm)
	}
	if st.Stages(d) == 0 {
		return gpu.Config{}, gpu.Unsupported("hopper %s: needs %d bytes of shared memory per block for a %d-stage ring, over this GPU's %d", st.Name, MinStages*st.StageBytes+st.StoreBytes+alignSlack, MinStages, d.MaxSharedPerBlockOptin)
	}
	cfg := gpu.Config{Grid: gpu.D2(gpu.CeilDiv(s.N, st.BN), gpu.CeilDiv(s.M, st.BM)), Block: gpu.D1(st.Threads), SharedBytes: st.SharedBytes(d)}
	if st.Cluster > 0 {
		units := st.superTiles(s) * st.Slices(s, d)
		clusters := units
		if d.SMs > 0 {
			clusters = min(units, d.SMs/st.Cluster)
		}
		cfg.Grid = gpu.D1(st.Cluster * max(1, clusters))
	}
	return cfg, nil
}

// superTiles is the number of super-tiles of C (a cluster's tiles, side by side in M) of a
// cluster step on s.
func (st Step) superTiles(s matmul.Shape) int {
	return gpu.CeilDiv(s.N, st.BN) * gpu.CeilDiv(s.M, st.Cluster*st.BM)
}

// SliceMinTiles is the fewest 64-deep k tiles a slice of K gets in the split step: each slice
// fills its ring and writes its partial C once, which a few hundred k steps pay for.
const SliceMinTiles = 16

// Slices is the number of slices of K the split step cuts a product of shape s into on d: one
// when C's super-tiles keep at least half of the clusters that fit busy, else as many as give
// every cluster a (super-tile, slice) pair, each slice at least SliceMinTiles k tiles deep. Steps
// other than the matmul split (the convolutions too) have one. KernelBench's problem 6
// (256 x 256 x 524288) is 2 super-tiles: on 132 SMs, 66 clusters, 33 slices of 248 k tiles.
func (st Step) Slices(s matmul.Shape, d gpu.DeviceInfo) int {
	if st.Products != SplitDType || st.Conv || st.Cluster == 0 || d.SMs == 0 {
		return 1
	}
	supers, clusters := st.superTiles(s), d.SMs/st.Cluster
	if 2*supers >= clusters {
		return 1
	}
	tiles := gpu.CeilDiv(pad8(s.K), 64)
	return max(1, min(clusters/supers, tiles/SliceMinTiles))
}

// WorkspaceBytes is the device memory of the split step's slices of K on s and d: a partial C
// per slice when there are several, else none.
func (st Step) WorkspaceBytes(s matmul.Shape, d gpu.DeviceInfo) int64 {
	if n := st.Slices(s, d); n > 1 {
		return int64(n) * int64(s.M) * int64(s.N) * 4
	}
	return 0
}

// DefinesOn are the step's compile defines for dtype on d: its own, USE_BF16 for bfloat16, and the
// ring's depth (STAGES) on d.
func (st Step) DefinesOn(dtype string, d gpu.DeviceInfo) []string {
	defs := append([]string{}, st.Defines...)
	if dtype == BF16 {
		defs = append(defs, "USE_BF16")
	}
	if n := st.Stages(d); st.StageBytes > 0 && n > 0 {
		defs = append(defs, fmt.Sprintf("STAGES=%d", n))
	}
	return defs
}

// Options are the step's compile options for dtype on d.
func (st Step) Options(dtype string, d gpu.DeviceInfo) compile.Options {
	return compile.Options{Arch: Arch, Defines: st.DefinesOn(dtype, d)}
}

// Source is the step's CUDA source: code when not empty (a reader's edited copy), the file otherwise.
func (st Step) Source(code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return kh.Source(st.File)
}

// checkDType refuses a format the steps are not built for.
func checkDType(dtype string) error {
	if dtype != FP16 && dtype != BF16 {
		return fmt.Errorf("hopper: format %q: the steps take %q or %q", dtype, FP16, BF16)
	}
	return nil
}

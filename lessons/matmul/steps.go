package matmul

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

// Step is one rung of the ladder: its source file and kernel, the number format of its products,
// the build options, and a Plan that refuses a shape it cannot take (with an error naming the
// limit) before any launch.
type Step struct {
	Name   string // "7 warp tile"
	File   string // in kernels/matmul
	Kernel string
	// DType is the format of the products: "float32" (CUDA cores), "tf32", "3xtf32", "fp16x3",
	// "bf16x3", or "fp16" (the hi-only split: a half-precision product).
	DType   string
	Defines []string
	Idea    string // one line: what changed
	// Split: the step first splits A and B into 16-bit hi and lo parts with mm_split_halves (in the
	// same file), and the product kernel takes (Ahi, Alo, Bhi, Blo, C, M, N, K).
	Split bool
	// SplitK: the step may cut K into slices (its plan's grid depth); the kernel then takes
	// (A, B, C, W, M, N, K, kTiles): the slices' partial products go to the workspace W and
	// mm_sum_slices (in the same file) adds them up into C, or, in a build with CLUSTER_K, the
	// slices are the blocks of a cluster and add themselves up on chip.
	SplitK bool
	// StageBytes is the shared memory of one pipeline stage of a step whose depth follows the GPU:
	// step 7 and the tensor-core steps (their files take the depth as -DSTAGES, 3 by default); 0
	// for a step that is not pipelined or whose build fixes its depth.
	StageBytes int
	// Stages is the pipeline depth of a build that fixes it (a tuning build of step 7 with -DSTAGES);
	// 0 for one whose depth follows the GPU (StageBytes) or that is not pipelined.
	Stages int
	// Plan returns the launch for shape s on device d, or why the kernel cannot take s.
	Plan func(s Shape, d gpu.DeviceInfo) (gpu.Config, error)
	// Shaped, when not nil, is the build the step runs on shape s on d (For): the any-shape step's
	// tile is a define chosen by the shape. Nil for a step with one build.
	Shaped func(s Shape, d gpu.DeviceInfo) Step
}

// For is the build of the step that runs shape s on d: Shaped's when the step has it, else the
// step itself. Launcher, Report and CompileReport compile this build.
func (st Step) For(s Shape, d gpu.DeviceInfo) Step {
	if st.Shaped == nil {
		return st
	}
	return st.Shaped(s, d)
}

// Tol is the step's tolerance for dot products of length K (tolerance.go).
func (st Step) Tol(K int) check.Tolerance { return Tolerance(st.DType, K) }

// needMult refuses a shape whose dimensions are not multiples of the kernel's tile.
func needMult(name string, s Shape, bm, bn, bk int) error {
	if s.M%bm != 0 || s.N%bn != 0 || s.K%bk != 0 {
		return fmt.Errorf("matmul %s: %v is not a multiple of its %d x %d x %d tile (needs M %% %d == 0, N %% %d == 0, K %% %d == 0); use the shared step or Multiply, which take any shape",
			name, s, bm, bn, bk, bm, bn, bk)
	}
	return nil
}

// needSM80 refuses GPUs without cp.async and mma.sync (compute capability below 8.0): a refusal
// because of the GPU (gpu.ErrUnsupported), which runs record and go on from.
func needSM80(name string, d gpu.DeviceInfo) error {
	return gpu.NeedCC("matmul "+name, d, 80, "cp.async and mma.sync")
}

// needShared refuses a launch whose dynamic shared memory is over the device's opt-in limit (a
// device whose limit is not known is not refused).
func needShared(name string, d gpu.DeviceInfo, bytes int) error {
	if lim := d.MaxSharedPerBlockOptin; lim > 0 && bytes > lim {
		return gpu.Unsupported("matmul %s: needs %d bytes (%.1f KiB) of shared memory per block, over this GPU's limit of %d (%.1f KiB)",
			name, bytes, float64(bytes)/1024, lim, float64(lim)/1024)
	}
	return nil
}

// Shared memory of one pipeline stage of the tensor-core steps, and of their default 3 stages.
const (
	TF32Stage   = 4 * (128*36 + 32*136)     // 8_tf32_mma.cu: 35,840 bytes
	SplitStage  = 2 * (2*128*40 + 2*32*136) // 9_split.cu: 37,888 bytes
	TF32Shared  = 3 * TF32Stage             // 105 KiB
	SplitShared = 3 * SplitStage            // 111 KiB
)

// MaxStages is the pipeline depth of the tensor-core steps where it fits (their files' default);
// MinStages the shallowest that still overlaps a load with a product.
const (
	MaxStages = 3
	MinStages = 2
)

// StagesOn is the pipeline depth a pipelined step (step 7, the tensor-core steps) runs with on d: 3
// where 3 stages of shared memory fit in a block (H100, A100), 2 where only 2 do (the 99 KiB of
// compute capability 8.6 and 8.9: A10, RTX 3090, L4, RTX 4090, for the tensor-core steps), 0 where
// not even 2 do. It is the step's Stages for a build that fixes its depth, and MaxStages for a step
// that is not pipelined and for a device whose limit is not known.
func (st Step) StagesOn(d gpu.DeviceInfo) int {
	if st.Stages > 0 {
		return st.Stages
	}
	lim := d.MaxSharedPerBlockOptin
	if st.StageBytes == 0 || lim == 0 {
		return MaxStages
	}
	for n := MaxStages; n >= MinStages; n-- {
		if n*st.StageBytes <= lim {
			return n
		}
	}
	return 0
}

// DefinesOn are the step's defines on d: its own, plus STAGES=2 where the default 3 stages do not fit.
func (st Step) DefinesOn(d gpu.DeviceInfo) []string {
	if n := st.StagesOn(d); st.StageBytes > 0 && n > 0 && n != MaxStages {
		return append(append([]string{}, st.Defines...), fmt.Sprintf("STAGES=%d", n))
	}
	return st.Defines
}

// DepthNote says which pipeline depth a pipelined step runs with on d, and why when it is not the
// default; "" for a step that is not pipelined.
func (st Step) DepthNote(d gpu.DeviceInfo) string {
	if st.StageBytes == 0 {
		return ""
	}
	n := st.StagesOn(d)
	if n == MaxStages || n == 0 {
		return fmt.Sprintf("%d-stage cp.async pipeline (%.0f KiB of shared memory)", MaxStages, float64(MaxStages*st.StageBytes)/1024)
	}
	return fmt.Sprintf("%d-stage cp.async pipeline (%.0f KiB of shared memory): %d stages (%.0f KiB) are over this GPU's %.0f KiB per block",
		n, float64(n*st.StageBytes)/1024, MaxStages, float64(MaxStages*st.StageBytes)/1024, float64(d.MaxSharedPerBlockOptin)/1024)
}

func grid2(s Shape, bm, bn int) gpu.Dim { return gpu.D2(gpu.CeilDiv(s.N, bn), gpu.CeilDiv(s.M, bm)) }

func tiled(name string, bm, bn, bk, threads int) func(Shape, gpu.DeviceInfo) (gpu.Config, error) {
	return func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
		if err := needMult(name, s, bm, bn, bk); err != nil {
			return gpu.Config{}, err
		}
		return gpu.Config{Grid: grid2(s, bm, bn), Block: gpu.D1(threads)}, nil
	}
}

// pipelined is the plan of a tensor-core step whose stages take stage bytes each: 3 of them where
// they fit, 2 where only 2 do, refused (naming the limit) where not even 2 do.
func pipelined(name string, bk, stage int) func(Shape, gpu.DeviceInfo) (gpu.Config, error) {
	return pipelinedPlan(name, 128, bk, 256, stage, Step{StageBytes: stage}.StagesOn, func(n int) int { return n * stage })
}

// pipelinedPlan is the plan of a step of 128 x bn x bk tiles, blocks of threads and a cp.async
// pipeline whose stages take stage bytes each: it refuses GPUs without cp.async, shapes off the
// tile, and a depth (depth(d); 0 when not even MinStages fit, which it then refuses at MinStages)
// over the GPU's shared memory, naming each limit, and launches with dynamic(n) bytes of dynamic
// shared memory for n stages.
func pipelinedPlan(name string, bn, bk, threads, stage int, depth func(gpu.DeviceInfo) int, dynamic func(n int) int) func(Shape, gpu.DeviceInfo) (gpu.Config, error) {
	return func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
		if err := needSM80(name, d); err != nil {
			return gpu.Config{}, err
		}
		if err := needMult(name, s, 128, bn, bk); err != nil {
			return gpu.Config{}, err
		}
		n := depth(d)
		if n == 0 {
			n = MinStages
		}
		if err := needShared(fmt.Sprintf("%s (%d-stage pipeline)", name, n), d, n*stage); err != nil {
			return gpu.Config{}, err
		}
		return gpu.Config{Grid: grid2(s, 128, bn), Block: gpu.D1(threads), SharedBytes: dynamic(n)}, nil
	}
}

// Steps are the ladder, in order.
var Steps = []Step{
	{Name: "1 naive", File: "1_naive.cu", Kernel: "mm_naive", DType: "float32",
		Idea: "one thread per output, threadIdx.x along the rows: uncoalesced",
		Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
			return gpu.Config{Grid: gpu.D2(gpu.CeilDiv(s.M, 16), gpu.CeilDiv(s.N, 16)), Block: gpu.D2(16, 16)}, nil
		}},
	{Name: "2 coalesced", File: "2_coalesced.cu", Kernel: "mm_coalesced", DType: "float32",
		Idea: "threadIdx.x along the columns: B loads and C stores coalesce",
		Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
			return gpu.Config{Grid: gpu.D2(gpu.CeilDiv(s.N, 32), gpu.CeilDiv(s.M, 8)), Block: gpu.D2(32, 8)}, nil
		}},
	{Name: "3 shared", File: "3_shared.cu", Kernel: "mm_shared", DType: "float32",
		Idea: "32x32 tiles of A and B staged in shared memory; any shape (the general fallback)",
		Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
			return gpu.Config{Grid: grid2(s, 32, 32), Block: gpu.D2(32, 32)}, nil
		}},
	{Name: "4 blocktile 1D", File: "4_blocktile_1d.cu", Kernel: "mm_blocktile_1d", DType: "float32",
		Idea: "8 outputs per thread in a column: 1.125 shared loads per FMA",
		Plan: tiled("4 blocktile 1D", 64, 64, 8, 512)},
	{Name: "5 blocktile 2D", File: "5_blocktile_2d.cu", Kernel: "mm_blocktile_2d", DType: "float32",
		Idea: "8x8 outputs per thread, outer products: 0.25 shared loads per FMA",
		Plan: tiled("5 blocktile 2D", 128, 128, 8, 256)},
	{Name: "6 vectorized", File: "6_vectorized.cu", Kernel: "mm_vectorized", DType: "float32",
		Idea: "float4 loads, A tile transposed and padded: no bank conflicts",
		Plan: tiled("6 vectorized", 128, 128, 8, 256)},
	WarpTileBuild{}.Step(),
	{Name: "8 tensor core tf32", File: "8_tf32_mma.cu", Kernel: "mm_tf32", DType: "tf32", StageBytes: TF32Stage,
		Idea: "mma.sync m16n8k8 TF32, 3-stage cp.async pipeline: TF32 accuracy",
		Plan: pipelined("8 tensor core tf32", 32, TF32Stage)},
	{Name: "8b 3xTF32 split", File: "8_tf32_mma.cu", Kernel: "mm_tf32", DType: "3xtf32", Defines: []string{"SPLIT3", "ACC2"}, StageBytes: TF32Stage,
		Idea: "step 8 with x = tf32 hi + tf32 lo, three products: float32 accuracy at 3x the tensor-core work",
		Plan: pipelined("8b 3xTF32 split", 32, TF32Stage)},
	{Name: "9 fp16x3 split", File: "9_split.cu", Kernel: "mm_split", DType: "fp16x3", Defines: []string{"ACC2"}, Split: true, StageBytes: SplitStage,
		Idea: "the article's split: x = fp16 hi + fp16 lo (scaled by 2^11), three m16n8k16 products, tile sums added in float32",
		Plan: pipelined("9 fp16x3 split", 32, SplitStage)},
}

// Variants are builds of the ladder's files that the lesson measures beside it: the unpadded
// vectorized kernel (bank conflicts), 3xTF32 and the fp16 split without the two-level
// accumulation, the bfloat16 split, and the hi-only split (a plain fp16 product).
var Variants = []Step{
	{Name: "6 vectorized, no padding", File: "6_vectorized.cu", Kernel: "mm_vectorized", DType: "float32", Defines: []string{"PAD=0"},
		Idea: "step 6 without the 4-word padding: 2-way bank conflicts on the transposed stores",
		Plan: tiled("6 vectorized, no padding", 128, 128, 8, 256)},
	{Name: "8b 3xTF32, one accumulator", File: "8_tf32_mma.cu", Kernel: "mm_tf32", DType: "3xtf32", Defines: []string{"SPLIT3"}, StageBytes: TF32Stage,
		Idea: "3xTF32 accumulating all of K in the tensor core's truncating adds",
		Plan: pipelined("8b 3xTF32, one accumulator", 32, TF32Stage)},
	{Name: "9 fp16x3, one accumulator", File: "9_split.cu", Kernel: "mm_split", DType: "fp16x3", Split: true, StageBytes: SplitStage,
		Idea: "the fp16 split accumulating all of K in the tensor core's truncating adds",
		Plan: pipelined("9 fp16x3, one accumulator", 32, SplitStage)},
	{Name: "9 bf16x3 split", File: "9_split.cu", Kernel: "mm_split", DType: "bf16x3", Defines: []string{"USE_BF16", "ACC2"}, Split: true, StageBytes: SplitStage,
		Idea: "x = bf16 hi + bf16 lo: 16 bits of x, float32's range",
		Plan: pipelined("9 bf16x3 split", 32, SplitStage)},
	HiOnly,
}

// HiOnly is the split step with only the hi x hi product: a plain fp16 matrix product, 1e-4-level
// relative error. It fails the lesson's float32 check at any scale of the inputs, and passes
// KernelBench's allclose at 1e-2 when the outputs are small.
var HiOnly = Step{Name: "fp16 only (hi x hi)", File: "9_split.cu", Kernel: "mm_split", DType: "fp16", Defines: []string{"HI_ONLY"}, Split: true, StageBytes: SplitStage,
	Idea: "the split without its low parts: a half-precision product",
	Plan: pipelined("fp16 only", 32, SplitStage)}

// Fallback is the step that takes any shape on every GPU.
var Fallback = Steps[2]

// StepByName finds a step of the ladder, a variant, the any-shape or the thin-K step by its name or
// its number prefix ("7", "8b", "7c").
func StepByName(name string) (Step, error) {
	all := append(append(append([]Step{}, Steps...), Variants...), AnyShape, ThinK)
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	for _, s := range all {
		if len(s.Name) > len(name) && s.Name[:len(name)] == name && s.Name[len(name)] == ' ' {
			return s, nil
		}
	}
	return Step{}, fmt.Errorf("matmul: no step %q", name)
}

// Source is a step's CUDA source: code when not empty (a reader's kernel), the embedded file otherwise.
func (st Step) Source(code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return km.Source(st.File)
}

// Options are the step's compile options for arch with its own defines (3 pipeline stages).
func (st Step) Options(arch string) compile.Options {
	return compile.Options{Arch: arch, Defines: st.Defines}
}

// OptionsOn are the step's compile options for arch on d: its defines on d (DefinesOn).
func (st Step) OptionsOn(arch string, d gpu.DeviceInfo) compile.Options {
	return compile.Options{Arch: arch, Defines: st.DefinesOn(d)}
}

// Validate checks the shape against the problem's and the step's limits without launching.
func (st Step) Validate(s Shape, d gpu.DeviceInfo) error {
	if err := s.Validate(); err != nil {
		return err
	}
	_, err := st.Plan(s, d)
	return err
}

// Pick is the fastest step that takes s on d: the last step of the ladder from 7 on (the cp.async
// steps) whose plan accepts it, skipping the TF32 step when accurate is true (float32 accuracy asked
// for) and the fp16 split when fp16Safe is false (an input at or over fp16's largest value, 65504,
// would overflow its high part); when none does, ThinK on a product less than SmallK deep (on every
// GPU), else AnyShape, which is step 7 for any shape (a K that is not a multiple of step 7's 32
// included: it runs ahead of steps 4 to 6 wherever it runs); on a GPU without cp.async, the last of
// steps 4 to 6 that takes s, else the shared-memory step.
func Pick(s Shape, d gpu.DeviceInfo, accurate, fp16Safe bool) Step {
	return pick(s, d, func(st Step) bool { return (accurate && st.DType == "tf32") || (!fp16Safe && st.DType == "fp16x3") })
}

// pick is Pick with the steps skip says no to left out of the ladder.
func pick(s Shape, d gpu.DeviceInfo, skip func(Step) bool) Step {
	for i := len(Steps) - 1; i > 2; i-- {
		st := Steps[i]
		if skip(st) {
			continue
		}
		if i < warpTileIndex && s.K >= SmallK && AnyShape.Validate(s, d) == nil {
			return AnyShape // steps 4 to 6 take no product less than SmallK deep: ThinK runs those
		}
		if st.Validate(s, d) == nil {
			return st
		}
	}
	if s.K < SmallK {
		return ThinK
	}
	if AnyShape.Validate(s, d) == nil {
		return AnyShape
	}
	return Fallback
}

// warpTileIndex is step 7's place in Steps: the first step with cp.async.
const warpTileIndex = 6

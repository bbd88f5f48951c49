package conv

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kc "github.com/cudalessons/cudalessons/kernels/conv"
)

// Block is the threads per block of every kernel of the lesson.
const Block = 256

// The implicit GEMM's tile (steps 3 to 7): 128 output pixels x 96 output channels per block.
const (
	TileM = 128
	TileN = 96
)

// MaxTaps is the longest dot product (C*R*R) the implicit GEMM steps take: their tap table (8 bytes
// per tap) lives in shared memory beside the tiles.
const MaxTaps = 4096

// Stages is the cp.async pipeline's depth in steps 5 to 7 (the kernels' STAGES default).
const Stages = 3

// SharedLimit is step 2's shared memory budget: the default 48 KiB a block gets without opting in.
const SharedLimit = 48 << 10

// Launch is how a step runs on a shape: the kernel, its launch configuration and the extra int
// arguments after the shape's (the pool's PH, PW and the tile's TPH, TPW for the fused steps).
type Launch struct {
	Kernel string
	Config gpu.Config
	Extra  []int32
	Note   string
}

// Step is one rung of the lesson: its file and kernel, what it computes (a conv output, or the
// fused pooled output), its number format and tolerance, and a Plan that picks the launch for a
// shape or refuses it with the limit named, before any launch.
type Step struct {
	Name    string
	File    string
	Kernel  string
	DType   string
	Fused   bool     // writes the pooled output of conv + bias + ReLU + max pool
	Zero    bool     // the output must be zeroed before the launch (the atomicMax step)
	Defines []string // compile flags (-D) of this variant
	// Epilogue marks a step whose file has the EPILOGUE2 build (a ReLU and a second bias after
	// the conv's bias, Problem.SetEpilogue).
	Epilogue bool
	Tol      check.Tolerance
	Idea     string
	Plan     func(s Shape, d gpu.DeviceInfo) (Launch, error)
}

func gemmGrid(s Shape, kernel string, shared int) Launch {
	m := s.N * s.OH() * s.OW()
	return Launch{Kernel: kernel, Config: gpu.Config{Grid: gpu.D2(gpu.CeilDiv(m, TileM), gpu.CeilDiv(s.K, TileN)), Block: gpu.D1(Block), SharedBytes: shared}}
}

// tapTable is the shared memory of the tap table for taps rounded up to the tile depth bk.
func tapTable(s Shape, bk int) int { return 8 * gpu.CeilDiv(s.Taps(), bk) * bk }

// tcShared is the dynamic shared memory of a tensor-core step: stages tiles of 32 taps of the
// 128 + pad pixels and 96 + pad channels, and the tap table.
func tcShared(s Shape, dtype string, stages int) int {
	pad := 8
	if dtype == FP16 {
		pad = 4
	}
	return stages*4*32*(TileM+pad+TileN+pad) + tapTable(s, 32)
}

func checkTaps(name string, s Shape) error {
	if s.Taps() > MaxTaps {
		return fmt.Errorf("conv %s: C*R*R = %d*%d*%d = %d taps, over the step's limit of %d (its tap table of 8 bytes per tap lives in shared memory)", name, s.C, s.R, s.R, s.Taps(), MaxTaps)
	}
	return nil
}

func checkTensorCores(name string, d gpu.DeviceInfo) error {
	return gpu.NeedCC("conv "+name, d, 80, "mma.sync with TF32, cp.async")
}

// checkShared refuses a launch whose dynamic shared memory is over the GPU's opt-in limit per block
// (99 KiB on compute capability 8.6 and 8.9: the deep layer's 2304-tap table beside three stages).
func checkShared(name string, s Shape, shared int, d gpu.DeviceInfo) error {
	if limit := d.MaxSharedPerBlockOptin; limit > 0 && shared > limit {
		return gpu.Unsupported("conv %s: %d taps need %d bytes of shared memory per block (the tiles and the tap table), over this GPU's limit of %d (%s)",
			name, s.Taps(), shared, limit, d.Name)
	}
	return nil
}

// tcPlan is the plan of a tensor-core conv step (4 or 5).
func tcPlan(name, kernel, dtype string, stages int) func(Shape, gpu.DeviceInfo) (Launch, error) {
	return func(s Shape, d gpu.DeviceInfo) (Launch, error) {
		if err := checkTaps(name, s); err != nil {
			return Launch{}, err
		}
		if err := checkTensorCores(name, d); err != nil {
			return Launch{}, err
		}
		shared := tcShared(s, dtype, stages)
		if err := checkShared(name, s, shared, d); err != nil {
			return Launch{}, err
		}
		return gemmGrid(s, kernel, shared), nil
	}
}

// PoolTile is step 7's pool tile for a shape: the TPH x TPW tile of pooled outputs whose conv
// region (2TPH+1) x (2TPW+1) fits in the GEMM tile's 128 rows, chosen to make the fewest blocks per
// image (the fewest GEMM rows computed in all).
func PoolTile(s Shape) (tph, tpw int) {
	best := -1
	for a := 1; a <= s.PH(); a++ {
		for b := 1; b <= s.PW(); b++ {
			if (2*a+1)*(2*b+1) > TileM {
				break
			}
			n := gpu.CeilDiv(s.PH(), a) * gpu.CeilDiv(s.PW(), b)
			if best < 0 || n < best {
				best, tph, tpw = n, a, b
			}
		}
	}
	return tph, tpw
}

// atomicPlan is step 6's plan (and its no-ReLU demonstration's).
func atomicPlan(s Shape, d gpu.DeviceInfo) (Launch, error) {
	l, err := tcPlan("6 fused atomicMax", "conv_pool_atomic", TF32, Stages)(s, d)
	l.Extra = fusedExtra(s)
	return l, err
}

func fusedExtra(s Shape) []int32 { return []int32{int32(s.PH()), int32(s.PW())} }

// Steps are the lesson's steps, in order.
var Steps = []Step{
	{Name: "1 direct", File: "1_direct.cu", Kernel: "conv_direct", DType: F32, Tol: Tol(F32),
		Idea: "one thread per output, the definition as three nested loops",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			return Launch{Kernel: "conv_direct", Config: gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, s.YLen(), Block, 8)), Block: gpu.D1(Block)}}, nil
		}},
	{Name: "2 shared tiles", File: "2_shared.cu", Kernel: "conv_shared", DType: F32, Tol: Tol(F32),
		Idea: "16 x 16 pixels x 16 filters per block; the input patch and the filters in shared memory, channel by channel",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			pt := 15*s.S + s.R
			shared := 4 * (pt*pt + 16*s.R*s.R)
			if shared > SharedLimit {
				return Launch{}, fmt.Errorf("conv 2 shared tiles: a %dx%d kernel at stride %d needs a %dx%d input patch and the filters, %d bytes of shared memory, over the step's limit of %d", s.R, s.R, s.S, pt, pt, shared, SharedLimit)
			}
			z := s.N * gpu.CeilDiv(s.K, 16)
			if z > 65535 {
				return Launch{}, fmt.Errorf("conv 2 shared tiles: N * ceil(K/16) = %d blocks in grid.z, over the limit of 65535", z)
			}
			return Launch{Kernel: "conv_shared", Config: gpu.Config{Grid: gpu.Dim{X: gpu.CeilDiv(s.OW(), 16), Y: gpu.CeilDiv(s.OH(), 16), Z: z}, Block: gpu.D2(16, 16), SharedBytes: shared}}, nil
		}},
	{Name: "3 implicit GEMM", File: "3_igemm.cu", Kernel: "conv_igemm", DType: F32, Tol: Tol(F32), Epilogue: true,
		Idea: "the conv as a 128 x 96 register-tiled matrix product, im2col gathered tile by tile through a tap table",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := checkTaps("3 implicit GEMM", s); err != nil {
				return Launch{}, err
			}
			return gemmGrid(s, "conv_igemm", tapTable(s, 16)), nil
		}},
	{Name: "4 tensor cores TF32", File: "4_tensor_core.cu", Kernel: "conv_tc_tf32", DType: TF32, Tol: Tol(TF32),
		Idea: "mma.sync m16n8k8 on TF32-rounded inputs, float32 sums", Plan: tcPlan("4 tensor cores TF32", "conv_tc_tf32", TF32, 1)},
	{Name: "4 tensor cores FP16", File: "4_tensor_core.cu", Kernel: "conv_tc_fp16", DType: FP16, Tol: Tol(FP16),
		Idea: "mma.sync m16n8k16 on half-rounded inputs (the article's format), float32 sums", Plan: tcPlan("4 tensor cores FP16", "conv_tc_fp16", FP16, 1)},
	{Name: "5 cp.async TF32, 2 buffers", File: "5_cp_async.cu", Kernel: "conv_cpasync_tf32", DType: TF32, Tol: Tol(TF32), Epilogue: true, Defines: []string{"STAGES=2"},
		Idea: "the classic double buffer: cp.async (zero-fill for the padding) fills one buffer while the other is multiplied",
		Plan: tcPlan("5 cp.async TF32, 2 buffers", "conv_cpasync_tf32", TF32, 2)},
	{Name: "5 cp.async TF32", File: "5_cp_async.cu", Kernel: "conv_cpasync_tf32", DType: TF32, Tol: Tol(TF32), Epilogue: true,
		Idea: "a ring of three cp.async buffers: two tiles in flight while one is multiplied",
		Plan: tcPlan("5 cp.async TF32", "conv_cpasync_tf32", TF32, Stages)},
	{Name: "5 cp.async FP16", File: "5_cp_async.cu", Kernel: "conv_cpasync_fp16", DType: FP16, Tol: Tol(FP16), Epilogue: true,
		Idea: "step 5 with half inputs", Plan: tcPlan("5 cp.async FP16", "conv_cpasync_fp16", FP16, Stages)},
	{Name: "6 fused atomicMax", File: "6_fused_atomic.cu", Kernel: "conv_pool_atomic", DType: TF32, Tol: Tol(TF32), Fused: true, Zero: true,
		Idea: "step 5 + bias + ReLU + pool in the epilogue by integer atomicMax on the float bits (valid because ReLU >= 0)",
		Plan: atomicPlan},
	{Name: "7 fused tile pool", File: "7_fused_tile.cu", Kernel: "conv_pool_tile", DType: TF32, Tol: Tol(TF32), Fused: true,
		Idea: "a block computes the conv region of a tile of pool windows and pools it from shared memory: no atomics",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			l, err := tcPlan("7 fused tile pool", "conv_pool_tile", TF32, Stages)(s, d)
			if err != nil {
				return l, err
			}
			if s.N > 65535 {
				return Launch{}, fmt.Errorf("conv 7 fused tile pool: batch N = %d over the step's limit of 65535 (grid.z)", s.N)
			}
			tph, tpw := PoolTile(s)
			l.Config.Grid = gpu.Dim{X: gpu.CeilDiv(s.PH(), tph) * gpu.CeilDiv(s.PW(), tpw), Y: gpu.CeilDiv(s.K, TileN), Z: s.N}
			l.Extra = append(fusedExtra(s), int32(tph), int32(tpw))
			l.Note = fmt.Sprintf("pool tile %dx%d, conv region %dx%d", tph, tpw, 2*tph+1, 2*tpw+1)
			return l, nil
		}},
}

// NoReLU is step 6 compiled without its ReLU: the demonstration that integer atomicMax on float
// bits is wrong once values can be negative. Its check compares with the pool of the conv without
// ReLU, and fails.
var NoReLU = Step{Name: "6 fused atomicMax without ReLU", File: "6_fused_atomic.cu", Kernel: "conv_pool_atomic", DType: TF32, Tol: Tol(TF32),
	Fused: true, Zero: true, Defines: []string{"NO_RELU"}, Idea: "step 6 with the ReLU removed (-DNO_RELU): negative values break the integer order",
	Plan: atomicPlan}

// relu says whether the step's pooled output follows a ReLU.
func (st Step) relu() bool {
	for _, d := range st.Defines {
		if d == "NO_RELU" {
			return false
		}
	}
	return true
}

// StepByName finds a step by its name or its number ("3"; "4" is the TF32 variant).
func StepByName(name string) (Step, error) {
	if name == NoReLU.Name {
		return NoReLU, nil
	}
	return lab.StepNamed("conv", Steps, func(st Step) string { return st.Name }, name)
}

// MustStep is StepByName for the lesson's own names; it panics on a name that is not a step.
func MustStep(name string) Step {
	st, err := StepByName(name)
	if err != nil {
		panic(err)
	}
	return st
}

// PlanFor validates the shape (with the pool's rule for a fused step) and returns the step's launch.
func (st Step) PlanFor(s Shape, d gpu.DeviceInfo) (Launch, error) {
	v := s.Validate
	if st.Fused {
		v = s.ValidatePool
	}
	if err := v(); err != nil {
		return Launch{}, err
	}
	return st.Plan(s, d)
}

// Source is the step's CUDA source: code in place of its file when code is not empty (a reader's
// edit), the embedded file otherwise.
func (st Step) Source(code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return kc.Source(st.File)
}

// StepChecks checks every step of the ladder on d at the article's layer (AlexNet's first): the
// need its source declares (the tensor-core steps 4 to 7 need compute capability 8.0), then its
// plan (shared memory per block). The fused steps' refusal leaves PyTorch's three kernels.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, st := range Steps {
		out = append(out, lab.CheckStep(kc.Kernels, st.Name, st.File, st.Defines, d, func() error {
			_, err := st.PlanFor(AlexNet, d)
			return err
		}))
	}
	// the fused steps: when neither runs, PyTorch's three kernels (conv, ReLU, pool) do the layer
	fusedRuns := false
	for _, c := range out {
		if c.Runs() && MustStep(c.Step).Fused {
			fusedRuns = true
		}
	}
	for i, c := range out {
		if !c.Runs() && MustStep(c.Step).Fused && !fusedRuns {
			out[i].Instead = Eager
		}
	}
	return out
}

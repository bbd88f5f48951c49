package rwkv

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// ID names the lesson's results and notebook.
const ID = "01_rwkv"

// BF is the number of batch rows of one channel a block of v3 and v4 computes (the article's 8).
const BF = 8

// TMax is the largest T of the steps that keep one thread per output (or per four) and static
// shared rows: v0 to v4 and the exercises.
const TMax = 1024

// Launch is how a step runs on a shape: the launch configuration and the kernel's arguments after
// the common (w, k, out, eps, B, C, T).
type Launch struct {
	Config gpu.Config
	Extra  []any
}

// Step is one rung of the forward ladder: its source file, kernel, tolerance, and a Plan that
// refuses a shape the kernel cannot take (with an error naming the limit) before any launch.
type Step struct {
	Name   string // "v0 naive"
	File   string // in kernels/rwkv
	Kernel string
	DType  string // "float32", or "tf32" for the tensor-core step
	// Defines are -D flags the source is compiled with (a tile size).
	Defines []string
	Tol     check.Tolerance
	Idea    string // one line: what changed
	// Plan returns the launch for shape s on device d, or why the kernel cannot take s.
	Plan func(s Shape, d gpu.DeviceInfo) (Launch, error)
}

func needT(name string, s Shape, maxT, mult int) error {
	if s.T > maxT {
		return fmt.Errorf("rwkv %s: T = %d is over the kernel's limit T <= %d", name, s.T, maxT)
	}
	if mult > 1 && s.T%mult != 0 {
		return fmt.Errorf("rwkv %s: T = %d is not a multiple of %d, which the kernel needs (T %% %d == 0)", name, s.T, mult, mult)
	}
	return nil
}

func needB(name string, s Shape, mult int) error {
	if s.B%mult != 0 {
		return fmt.Errorf("rwkv %s: B = %d is not a multiple of %d, which the kernel needs (B %% %d == 0)", name, s.B, mult, mult)
	}
	return nil
}

// sharedLimit is the device's opt-in shared memory per block (its default when the opt-in is not
// known), or 0 when neither is known.
func sharedLimit(d gpu.DeviceInfo) int {
	if d.MaxSharedPerBlockOptin > 0 {
		return d.MaxSharedPerBlockOptin
	}
	return d.MaxSharedPerBlock
}

// needShared refuses a launch whose shared memory is over the GPU's limit per block: a refusal
// because of the GPU (gpu.ErrUnsupported; one with more shared memory takes the shape). A device
// whose limit is not known is not refused.
func needShared(name string, s Shape, d gpu.DeviceInfo, bytes int) error {
	if lim := sharedLimit(d); lim > 0 && bytes > lim {
		return gpu.Unsupported("rwkv %s: T = %d needs %d bytes (%.1f KiB) of shared memory per block, over this GPU's limit of %d bytes (%.1f KiB)",
			name, s.T, bytes, float64(bytes)/1024, lim, float64(lim)/1024)
	}
	return nil
}

// V5Tile is the outputs per lane of v5, and V5Rows its batch rows per block (one per lane).
const (
	V5Tile  = 16
	V5Rows  = 32
	V5Block = 256
)

// V5Layout is v5's padded length Tpad (T rounded up to the tile) and shared row stride S (the
// smallest S >= Tpad + tile with S % 32 == 4, for conflict-free float4 loads), and its shared bytes.
func V5Layout(T int) (tpad, stride, bytes int) { return V5LayoutTT(T, V5Tile) }

// V5LayoutTT is V5Layout for a tile of tt outputs per lane.
func V5LayoutTT(T, tt int) (tpad, stride, bytes int) {
	tpad = gpu.CeilDiv(T, tt) * tt
	stride = tpad + tt
	for stride%32 != 4 {
		stride++
	}
	return tpad, stride, 4 * (tpad + V5Rows*stride)
}

// V6Shared is the dynamic shared memory of v6 and v7: K (32 rows of T+4) and the skewed W array (8 rows of
// T+40), TF32-rounded floats.
func V6Shared(T int) int { return 4 * (32*(T+4) + 8*(T+32+8)) }

// V6Warps is v6's warps per block: the column tiles come in mirrored pairs, spread evenly over at
// most 16 warps.
func V6Warps(T int) int {
	pairs := max(1, (T/32+1)/2)
	per := gpu.CeilDiv(pairs, 16)
	return gpu.CeilDiv(pairs, per)
}

// V8Tile is v8's column tile (and K chunk) width: 64 when T % 64 == 0, else 32.
func V8Tile(T int) int {
	if T%64 == 0 {
		return 64
	}
	return 32
}

// V8Shared is the dynamic shared memory of v8: K (32 rows of T+4 floats), the reversed w row after 64
// zeros, and two mbarriers (8 bytes each) per chunk of V8Tile(T) columns.
func V8Shared(T int) int { return 4*(32*(T+4)+64+T) + 16*(T/V8Tile(T)) }

// V8MaxConsumers is the most consumer warps of a v8 block: the kernel's __launch_bounds__(224, 2) is
// 6 consumers and the producer, at most 128 registers a thread, two blocks an SM.
const V8MaxConsumers = 6

// V8Warps is v8's consumer warps per block: one per column tile, at most V8MaxConsumers (the kernel
// hands the tiles out longest first to the least-loaded warp). The block has one more warp, the producer.
func V8Warps(T int) int { return max(1, min(T/V8Tile(T), V8MaxConsumers)) }

// v8Plan is the launch of v8: one block per channel and 32 batch rows, consumer warps plus a producer.
func v8Plan(name string, s Shape, d gpu.DeviceInfo) (Launch, error) {
	if err := gpu.NeedCC("rwkv "+name, d, 80, "mma.sync with TF32, cp.async and mbarrier"); err != nil {
		return Launch{}, err
	}
	if s.T%32 != 0 {
		return Launch{}, fmt.Errorf("rwkv %s: T = %d is not a multiple of 32, which the kernel needs (T %% 32 == 0)", name, s.T)
	}
	if err := needB(name, s, 32); err != nil {
		return Launch{}, err
	}
	if nt := s.T / V8Tile(s.T); nt > 64 {
		return Launch{}, fmt.Errorf("rwkv %s: T = %d makes %d column tiles, over the kernel's limit of 64 (a 64-bit mask of tiles per warp)", name, s.T, nt)
	}
	bytes := V8Shared(s.T)
	if err := needShared(name, s, d, bytes); err != nil {
		return Launch{}, err
	}
	return Launch{Config: gpu.Config{Grid: gpu.D1(s.C * s.B / 32), Block: gpu.D1(32 * (V8Warps(s.T) + 1)), SharedBytes: bytes}}, nil
}

func rowsGrid(s Shape) gpu.Dim { return gpu.D1(s.B * s.C) }

// Steps are the forward ladder, in order.
var Steps = []Step{
	{Name: "v0 naive", File: "0_naive.cu", Kernel: "rwkv_fwd_v0", DType: "float32", Tol: check.FP32,
		Idea: "one thread per output, global memory",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("v0 naive", s, TMax, 1); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T)}}, nil
		}},
	{Name: "v1 shared", File: "1_shared.cu", Kernel: "rwkv_fwd_v1", DType: "float32", Tol: check.FP32,
		Idea: "w and k rows staged in shared memory",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("v1 shared", s, TMax, 1); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T)}}, nil
		}},
	{Name: "v2 float4", File: "2_float4.cu", Kernel: "rwkv_fwd_v2", DType: "float32", Tol: check.FP32,
		Idea: "4 outputs per thread, k reused 4x, float4 loads",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("v2 float4", s, TMax, 4); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T / 4)}}, nil
		}},
	{Name: "v3 batch group", File: "3_batch_group.cu", Kernel: "rwkv_fwd_v3", DType: "float32", Tol: check.FP32,
		Idea: "8 batch rows of one channel per block, w reused 8x",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("v3 batch group", s, TMax, 4); err != nil {
				return Launch{}, err
			}
			if err := needB("v3 batch group", s, BF); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: gpu.D1(s.C * s.B / BF), Block: gpu.D1(s.T / 4)}}, nil
		}},
	{Name: "v4 balanced", File: "4_balanced.cu", Kernel: "rwkv_fwd_v4", DType: "float32", Tol: check.FP32,
		Idea: "each thread takes groups q and Q-1-q: equal work per thread",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("v4 balanced", s, TMax, 8); err != nil {
				return Launch{}, err
			}
			if err := needB("v4 balanced", s, BF); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: gpu.D1(s.C * s.B / BF), Block: gpu.D1(s.T / 8)}}, nil
		}},
	V5Step(V5Tile),
	{Name: "v6 tensor core tf32", File: "6_tensorcore_tf32.cu", Kernel: "rwkv_fwd_v6", DType: "tf32", Tol: check.TF32,
		Idea: "per channel a product with a triangular Toeplitz matrix on TF32 tensor cores",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) { return tensorCorePlan("v6 tensor core tf32", s, d) }},
	{Name: "v7 tensor core 3xtf32", File: "7_tensorcore_3xtf32.cu", Kernel: "rwkv_fwd_v7", DType: "3xtf32", Tol: check.TensorCoreFP32,
		Idea: "v6 with each input split into TF32 hi + lo and three products: the input rounding is gone, the tensor core's accumulation remains",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) { return tensorCorePlan("v7 tensor core 3xtf32", s, d) }},
	{Name: "v8 tensor core mma", File: "8_tensorcore_mma.cu", Kernel: "rwkv_fwd_v8", DType: "tf32", Tol: check.TF32,
		Idea: "mma.sync PTX: W fragments from one reversed w row in a sliding register window, 32x64 warp tiles, K streamed by a cp.async producer warp",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) { return v8Plan("v8 tensor core mma", s, d) }},
}

// V5Tiles are the tile sizes (outputs per lane) the lesson measures v5 with.
var V5Tiles = []int{8, 16, 32}

// V5Step is v5 compiled for tt outputs per lane (a multiple of 4); V5Step(V5Tile) is the ladder's step.
func V5Step(tt int) Step {
	name := "v5 register tile"
	if tt != V5Tile {
		name = fmt.Sprintf("v5 register tile, %d per lane", tt)
	}
	return Step{Name: name, File: "5_register_tile.cu", Kernel: "rwkv_fwd_v5", DType: "float32", Tol: check.FP32,
		Defines: []string{fmt.Sprintf("TT=%d", tt)},
		Idea:    fmt.Sprintf("lanes = 32 batch rows, %d outputs per lane in registers, sliding k window", tt),
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			tpad, stride, bytes := V5LayoutTT(s.T, tt)
			if err := needShared(name, s, d, bytes); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: gpu.D1(s.C * gpu.CeilDiv(s.B, V5Rows)), Block: gpu.D1(V5Block), SharedBytes: bytes},
				Extra: []any{int32(tpad), int32(stride)}}, nil
		}}
}

// tensorCorePlan is the launch of v6 and v7: one block per channel and 32 batch rows.
func tensorCorePlan(name string, s Shape, d gpu.DeviceInfo) (Launch, error) {
	if err := gpu.NeedCC("rwkv "+name, d, 80, "wmma with TF32"); err != nil {
		return Launch{}, err
	}
	if s.T%32 != 0 {
		return Launch{}, fmt.Errorf("rwkv %s: T = %d is not a multiple of 32, which the kernel needs (T %% 32 == 0)", name, s.T)
	}
	if err := needB(name, s, 32); err != nil {
		return Launch{}, err
	}
	bytes := V6Shared(s.T)
	if err := needShared(name, s, d, bytes); err != nil {
		return Launch{}, err
	}
	return Launch{Config: gpu.Config{Grid: gpu.D1(s.C * s.B / 32), Block: gpu.D1(32 * V6Warps(s.T)), SharedBytes: bytes}}, nil
}

// StepByName finds a step by its name or its version prefix ("v5").
func StepByName(name string) (Step, error) {
	for _, s := range Steps {
		if s.Name == name || (len(name) >= 2 && len(s.Name) > len(name) && s.Name[:len(name)] == name && s.Name[len(name)] == ' ') {
			return s, nil
		}
	}
	return Step{}, fmt.Errorf("rwkv: no step %q", name)
}

// Source is a step's CUDA source: code when not empty (a reader's kernel), the embedded file otherwise.
func (st Step) Source(code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return kr.Source(st.File)
}

// Validate checks the shape against the step's limits without launching.
func (st Step) Validate(s Shape, d gpu.DeviceInfo) error {
	if err := s.Validate(); err != nil {
		return err
	}
	_, err := st.Plan(s, d)
	return err
}

// ForwardWork is the forward's useful work: 2*B*C*T(T+1)/2 FLOPs and the minimum DRAM traffic.
func ForwardWork(s Shape) bench.Work {
	return bench.Work{FLOPs: s.ForwardFLOPs(), Bytes: s.ForwardBytes()}
}

// BackwardWork is the backward's (dk and dw) useful work and minimum traffic.
func BackwardWork(s Shape) bench.Work {
	return bench.Work{FLOPs: s.BackwardFLOPs(), Bytes: s.BackwardBytes()}
}

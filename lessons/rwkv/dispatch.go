package rwkv

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// The op a model calls must take any valid shape; the ladder's fast steps refuse many (B not a
// multiple of 8, T not a multiple of 4, 8 or 32, T over 1024, shared memory). So the op dispatches:
// it walks a list of steps in speed order and takes the first whose Plan accepts the shape, and
// the list ends with a general step that accepts every shape Shape.Validate accepts.

// GeneralNT is the outputs per block (and threads per block) of the general steps.
const GeneralNT = 256

// maxGridY is the largest y (and z) dimension of a grid.
const maxGridY = 65535

// generalGrid is the grid of the general kernels: rows on x, chunks of GeneralNT outputs on y.
func generalGrid(name string, s Shape, z int) (gpu.Dim, error) {
	chunks := gpu.CeilDiv(s.T, GeneralNT)
	if chunks > maxGridY {
		return gpu.Dim{}, fmt.Errorf("rwkv %s: T = %d needs %d chunks of %d, over the grid's y limit of %d", name, s.T, chunks, GeneralNT, maxGridY)
	}
	return gpu.Dim{X: s.Rows(), Y: chunks, Z: z}, nil
}

// GeneralStep is the forward that takes any valid shape (kernels/rwkv/9_general.cu): shared-memory
// chunks of 256 outputs and 256 inputs, no multiple of anything required. Not a rung of the ladder:
// the op's fallback.
var GeneralStep = Step{Name: "general", File: "9_general.cu", Kernel: "rwkv_fwd_general", DType: "float32", Tol: check.FP32,
	Idea: "any shape: chunks of 256 outputs, the w and k chunks staged in shared memory",
	Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
		if err := s.Validate(); err != nil {
			return Launch{}, err
		}
		grid, err := generalGrid("general", s, 1)
		if err != nil {
			return Launch{}, err
		}
		return Launch{Config: gpu.Config{Grid: grid, Block: gpu.D1(GeneralNT)}}, nil
	}}

// GeneralBackward is the backward that takes any valid shape (kernels/rwkv/9_general.cu): dk as
// the general forward on reversed time, dw per row as the general forward with g as the filter,
// then the reduce over b.
var GeneralBackward = BackwardStep{Name: "bwd general", File: "9_general.cu", Kernels: []string{"rwkv_bwd_general"},
	Idea: "any shape: dk and the per-row dw as chunked shared-memory products (grid z picks which), dw summed over b after",
	Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
		if err := s.Validate(); err != nil {
			return BackwardPlan{}, err
		}
		grid, err := generalGrid("bwd general", s, 2)
		if err != nil {
			return BackwardPlan{}, err
		}
		return BackwardPlan{Main: []Launch{{Config: gpu.Config{Grid: grid, Block: gpu.D1(GeneralNT)}}}, Partials: s.B}, nil
	}}

// Precision says which forward steps the op may use.
type Precision string

const (
	// FP32 allows only steps with float32 products and sums (the fp32 tolerance): the default.
	FP32 Precision = "fp32"
	// TF32 also allows the tensor-core steps, whose inputs are rounded to TF32 (10-bit mantissa).
	TF32 Precision = "tf32"
)

// Dispatch is the op's choice of steps: forward and backward steps in speed order, each the
// fastest measured (at the article's shape on the H100, results/01_rwkv.json) of those after it,
// each ending with the general step.
type Dispatch struct {
	Precision Precision
	Forward   []Step
	Backward  []BackwardStep
}

func mustStep(name string) Step {
	s, err := StepByName(name)
	if err != nil {
		panic(err)
	}
	return s
}

func mustBackward(name string) BackwardStep {
	s, err := BackwardStepByName(name)
	if err != nil {
		panic(err)
	}
	return s
}

// DispatchFor is the op's dispatch at a precision: for FP32, v4 (0.42 ms at the article's shape),
// v5 (0.47 ms, any B, T up to its shared memory), v3, v2, v1, v0, general; for TF32, v8 and v6
// first. Backward: bwd v4 (1.0 ms), v3, v2, v1, v0, general.
func DispatchFor(p Precision) (Dispatch, error) {
	fwd := []Step{mustStep("v4"), mustStep("v5"), mustStep("v3"), mustStep("v2"), mustStep("v1"), mustStep("v0"), GeneralStep}
	switch p {
	case FP32:
	case TF32:
		fwd = append([]Step{mustStep("v8"), mustStep("v6")}, fwd...)
	default:
		return Dispatch{}, fmt.Errorf("rwkv op: precision %q is not %q or %q", p, FP32, TF32)
	}
	bwd := []BackwardStep{mustBackward("bwd v4"), mustBackward("bwd v3"), mustBackward("bwd v2"), mustBackward("bwd v1"), mustBackward("bwd v0"), GeneralBackward}
	return Dispatch{Precision: p, Forward: fwd, Backward: bwd}, nil
}

// Choice is the dispatch's decision on one shape: the steps chosen and why each faster one was
// passed over (its Plan's error).
type Choice struct {
	Shape            Shape
	Fwd              Step
	Bwd              BackwardStep
	FwdPlan          Launch
	FwdSkip, BwdSkip []string // "v4 balanced: B = 3 is not a multiple of 8 ..."
}

// Choose picks, for shape s on device d, the first forward and the first backward step whose Plan
// accepts s. An invalid shape is refused with Shape.Validate's error; with the general steps last,
// every valid shape gets a step.
func (dp Dispatch) Choose(s Shape, d gpu.DeviceInfo) (Choice, error) {
	c := Choice{Shape: s}
	if err := s.Validate(); err != nil {
		return c, err
	}
	found := false
	for _, st := range dp.Forward {
		l, err := st.Plan(s, d)
		if err != nil {
			c.FwdSkip = append(c.FwdSkip, err.Error())
			continue
		}
		c.Fwd, c.FwdPlan, found = st, l, true
		break
	}
	if !found {
		return c, fmt.Errorf("rwkv op on %v: no forward step takes the shape: %s", s, strings.Join(c.FwdSkip, "; "))
	}
	for _, st := range dp.Backward {
		if _, err := st.Plan(s, d); err != nil {
			c.BwdSkip = append(c.BwdSkip, err.Error())
			continue
		}
		c.Bwd = st
		return c, nil
	}
	return c, fmt.Errorf("rwkv op on %v: no backward step takes the shape: %s", s, strings.Join(c.BwdSkip, "; "))
}

// String says which steps were chosen and why the faster ones were not.
func (c Choice) String() string {
	return fmt.Sprintf("%v: forward %s, backward %s", c.Shape, c.Fwd.Name, c.Bwd.Name)
}

// DispatchTable shows the dispatch's choice on each shape: the steps chosen and the first reason
// the fastest step refused the shape.
func DispatchTable(dp Dispatch, d gpu.DeviceInfo, shapes []Shape) show.Table {
	t := show.Table{Title: fmt.Sprintf("The op's dispatch (%s): the first step in speed order whose plan takes the shape", dp.Precision),
		Header: []string{"shape", "forward", "backward", "why not the fastest forward", "why not the fastest backward"}}
	for _, s := range shapes {
		c, err := dp.Choose(s, d)
		if err != nil {
			t.Rows = append(t.Rows, []string{s.String(), "refused", "refused", err.Error(), ""})
			continue
		}
		first := func(skips []string) string {
			if len(skips) == 0 {
				return "—"
			}
			return skips[0]
		}
		t.Rows = append(t.Rows, []string{s.String(), c.Fwd.Name, c.Bwd.Name, first(c.FwdSkip), first(c.BwdSkip)})
	}
	var names []string
	for _, st := range dp.Forward {
		names = append(names, st.Name)
	}
	var bnames []string
	for _, st := range dp.Backward {
		bnames = append(bnames, st.Name)
	}
	t.Caption = "Forward order: " + strings.Join(names, ", ") + ". Backward order: " + strings.Join(bnames, ", ") + ". The general steps take any valid shape."
	return t
}

// DispatchShapes are shapes the notebook shows the dispatch on: the article's, and shapes the
// fast steps refuse (B odd, T odd, T = 1, T over 1024, T over v5's shared memory).
var DispatchShapes = []Shape{ArticleShape, {B: 3, C: 5, T: 37}, {B: 1, C: 1, T: 1}, {B: 12, C: 64, T: 1100}, {B: 2, C: 4, T: 3000}}

package rwkv

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// bwdH100 is enough of the H100's limits for the plans.
var bwdH100 = gpu.DeviceInfo{Major: 9, Minor: 0, MaxThreadsPerBlock: 1024, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10}

// TestBackwardKernelsCompile compiles every backward step with NVRTC for Ampere and Hopper and
// checks that each kernel the step launches is in the PTX, with no local memory in the register
// tile (a spilled ring or accumulator would show as .local).
func TestBackwardKernelsCompile(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	for _, st := range BackwardSteps {
		src, err := st.Source()
		if err != nil {
			t.Fatal(err)
		}
		for _, arch := range []string{"compute_80", "compute_90"} {
			res, err := compile.PTX(src, compile.Options{Arch: arch})
			if err != nil {
				t.Errorf("%s for %s: %v", st.Name, arch, err)
				continue
			}
			for _, k := range append(append([]string(nil), st.Kernels...), ReduceKernel) {
				if !strings.Contains(res.PTX, ".entry "+k+"(") {
					t.Errorf("%s for %s: kernel %s not in the PTX", st.Name, arch, k)
				}
			}
			if strings.Contains(st.File, "register_tile") && strings.Contains(res.PTX, ".local") {
				t.Errorf("%s for %s: the PTX uses local memory (the register arrays were not unrolled)", st.Name, arch)
			}
		}
	}
}

func TestBackwardPlansRefuseWithTheLimit(t *testing.T) {
	cases := []struct {
		step string
		s    Shape
		want string // in the error; "" means accepted
	}{
		{"bwd v0", Shape{2, 3, 1025}, "T <= 1024"},
		{"bwd v1", Shape{2, 3, 1025}, "T <= 1024"},
		{"bwd v2", Shape{2, 3, 10}, "T % 4 == 0"},
		{"bwd v3", Shape{3, 3, 16}, "B % 2 == 0"},
		{"bwd v3", Shape{2, 3, 18}, "T % 4 == 0"},
		{"bwd v4", Shape{2, 3, 1100}, "T <= 1024"},
		{"bwd v0", Shape{1, 1, 1}, ""},
		{"bwd v4", Shape{3, 5, 13}, ""},
		{"bwd v4", Shape{33, 2, 1024}, ""},
		{"bwd v3", ArticleShape, ""},
	}
	for _, c := range cases {
		st, err := BackwardStepByName(c.step)
		if err != nil {
			t.Fatal(err)
		}
		err = st.Validate(c.s, bwdH100)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %v refused: %v", st.Name, c.s, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on %v: error %v, want one naming %q", st.Name, c.s, err, c.want)
		}
	}
	if err := FastestBackward().Validate(Shape{0, 3, 8}, bwdH100); err == nil {
		t.Error("an empty shape was accepted")
	}
	small := bwdH100
	small.MaxSharedPerBlockOptin = 64 << 10
	if err := FastestBackward().Validate(Shape{2, 2, 1024}, small); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("shared memory over the device's limit: %v", err)
	}
}

func TestBackwardPlanLaunchesFit(t *testing.T) {
	for _, st := range BackwardSteps {
		for _, s := range []Shape{ArticleShape, {2, 3, 1024}, {34, 3, 64}} {
			plan, err := st.Plan(s, bwdH100)
			if err != nil {
				t.Fatalf("%s %v: %v", st.Name, s, err)
			}
			if len(plan.Main) != len(st.Kernels) || plan.Partials < 1 {
				t.Errorf("%s %v: %d launches for %d kernels, %d partials", st.Name, s, len(plan.Main), len(st.Kernels), plan.Partials)
			}
			for _, l := range plan.Main {
				if err := gpu.CheckConfig(bwdH100, gpu.KernelAttrs{}, l.Config); err != nil {
					t.Errorf("%s %v: %v", st.Name, s, err)
				}
			}
		}
	}
}

// TestGradCheckCPUReference proves the float64 backward through the training loss with the
// autograd package's finite differences, on every element.
func TestGradCheckCPUReference(t *testing.T) {
	for _, s := range GradCheckShapes {
		res, err := GradCheckCPU(s, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Errorf("%v: %v: %v", s, res, res.Err())
		}
		if res.Checked != s.C*s.T+s.Len() {
			t.Errorf("%v: checked %d elements, want %d", s, res.Checked, s.C*s.T+s.Len())
		}
	}
}

// wrongDK is the CPU op with the classic mistake: dk computed with w read forwards (the forward's
// index pattern) instead of reversed in time.
type wrongDK struct{ CPUOp }

func (o wrongDK) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	grads, err := o.CPUOp.Backward(ctx, g)
	if err != nil {
		return nil, err
	}
	s := o.Shape
	w, gv := mustValues(ctx.Saved()[0]), mustValues(g)
	dk := make([]float64, s.Len())
	for r := 0; r < s.Rows(); r++ {
		c := r % s.C
		for u := 0; u < s.T; u++ {
			for t := u; t < s.T; t++ {
				dk[r*s.T+u] += gv[r*s.T+t] * w[c*s.T+(t-u)]
			}
		}
	}
	grads[1] = autograd.New("dk", dk, s.B, s.C, s.T)
	return grads, nil
}

func TestGradCheckCatchesWrongRWKVBackward(t *testing.T) {
	s := Shape{2, 2, 6}
	w, k := InputTensors(s, 5)
	op := wrongDK{CPUOp{Shape: s, Eps: Eps}}
	res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return TrainingLoss(tp, op, in[0], in[1])
	}, []*autograd.Tensor{w, k}, autograd.Float64Check)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK {
		t.Fatalf("a wrong dk passed the gradcheck: %v", res)
	}
	if res.Worst[0].Input != "k" {
		t.Errorf("the worst element is in %s, want k: %v", res.Worst[0].Input, res.Err())
	}
}

// The models below replay the index arithmetic of the kernels on the CPU (in float64), so that an
// off-by-one in a tile, a ring slot or a padding shows here without a GPU.

// modelTile is bwd_4_register_tile.cu: it returns dk and dw (after the reduce), NaN where nothing was
// written.
func modelTile(s Shape, w, k, g []float32) (dk, dw []float64) {
	const tile, rows, wpad = 32, 16, 32
	T, B, C := s.T, s.B, s.C
	tp, _, _ := BwdTileLayout(T)
	nt, warps := tp/tile, tp/BwdTilePad
	groups := gpu.CeilDiv(B, rows)
	dk = nanSlice(s.Len())
	part := nanSlice(groups * C * T)
	for c := 0; c < C; c++ {
		for rb := 0; rb < groups; rb++ {
			b0 := rb * rows
			sW := make([]float64, wpad+tp)
			for i := range sW {
				if v := i - wpad; v >= 0 && v < T {
					sW[i] = float64(w[c*T+(T-1)-v])
				}
			}
			sG := make([][]float64, rows)
			sK := make([][]float64, rows) // wpad zeros then kz
			for r := range sG {
				sG[r], sK[r] = make([]float64, tp), make([]float64, wpad+tp)
				if b := b0 + r; b < B {
					for t := 0; t < T; t++ {
						sG[r][t] = float64(g[(b*C+c)*T+t])
						sK[r][wpad+t] = float64(k[(b*C+c)*T+t])
					}
				}
			}
			for warp := 0; warp < warps; warp++ {
				for ph := 0; ph < 2; ph++ {
					var accK, accW [32][tile]float64
					tileOf := func(lane int) int {
						if ph == 0 {
							return 2*warp + lane>>4
						}
						return nt - 1 - (2*warp + lane>>4)
					}
					tw := 2 * warp * tile
					if ph == 1 {
						tw = (nt - 2 - 2*warp) * tile
					}
					for lane := 0; lane < 32; lane++ {
						r, u0 := lane&15, tileOf(lane)*tile
						var ringW, ringK [tile]float64
						for t0 := tw; t0 < tp; t0 += tile {
							for q := 0; q < tile; q++ {
								t := t0 + q
								ringW[q] = sW[wpad-u0+t] // panics if the padding is short
								ringK[q] = sK[r][wpad-u0+t]
								gv := sG[r][t]
								for i := 0; i < tile; i++ {
									accK[lane][i] += gv * ringW[(q-i)&(tile-1)]
									accW[lane][i] += gv * ringK[(q-i)&(tile-1)]
								}
							}
						}
					}
					for L := 0; L < 32; L++ { // the staged, coalesced dk stores
						for lane := 0; lane < 32; lane++ {
							bL, u := b0+(L&15), tileOf(L)*tile+lane
							if bL < B && u < T {
								dk[(bL*C+c)*T+u] = accK[L][lane]
							}
						}
					}
					for lane := 0; lane < 32; lane++ { // the butterfly over the half's 16 rows, then the stores
						r, s0 := lane&15, tileOf(lane)*tile
						for i := 0; i < tile; i++ {
							var sum float64
							for m := 0; m < 16; m++ {
								sum += accW[(lane&16)|m][i]
							}
							if i&15 == r && s0+i < T {
								part[(rb*C+c)*T+(T-1)-(s0+i)] = sum
							}
						}
					}
				}
			}
		}
	}
	dw = make([]float64, C*T)
	for i := range dw {
		for p := 0; p < groups; p++ {
			dw[i] += part[p*C*T+i]
		}
	}
	return dk, dw
}

// modelFloat4 is bwd_2_float4.cu (bwd_3 has the same index arithmetic per row), for one row.
func modelFloat4(T int, wr, kr, gr []float64) (dk, dwrow []float64) {
	dk, dwrow = nanSlice(T), nanSlice(T)
	for u0 := 0; u0 < T; u0 += 4 {
		var a [4]float64
		for x := u0; x < u0+3; x++ {
			ww := (T - 1) - x + u0
			a[0] += gr[x] * wr[ww]
			if x >= u0+1 {
				a[1] += gr[x] * wr[ww+1]
			}
			if x >= u0+2 {
				a[2] += gr[x] * wr[ww+2]
			}
		}
		for x := u0 + 3; x < T; x++ {
			ww := (T - 1) - x + u0
			for e := 0; e < 4; e++ {
				a[e] += gr[x] * wr[ww+e]
			}
		}
		copy(dk[u0:], a[:])
		j0 := u0
		a = [4]float64{}
		for y := 0; y <= j0; y++ {
			gg := y + (T - 1) - j0
			for e := 0; e < 4; e++ {
				a[e] += gr[gg-e] * kr[y]
			}
		}
		for y := j0 + 1; y <= j0+3; y++ {
			gg := y + (T - 1) - j0
			if y <= j0+1 {
				a[1] += gr[gg-1] * kr[y]
			}
			if y <= j0+2 {
				a[2] += gr[gg-2] * kr[y]
			}
			a[3] += gr[gg-3] * kr[y]
		}
		copy(dwrow[j0:], a[:])
	}
	return dk, dwrow
}

func nanSlice(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.NaN()
	}
	return x
}

func compareModel(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestRegisterTileModel(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {3, 2, 13}, {17, 2, 128}, {2, 1, 200}, {33, 1, 300}} {
		w, k := Inputs(s, 9)
		g := Upstream(s, 9)
		dk, dw := modelTile(s, w, k, g)
		compareModel(t, "dk "+s.String(), dk, BackwardDK(s, w, g))
		compareModel(t, "dw "+s.String(), dw, BackwardDW(s, k, g))
	}
}

func TestFloat4Model(t *testing.T) {
	for _, s := range []Shape{{1, 1, 4}, {2, 2, 16}, {1, 3, 44}} {
		w, k := Inputs(s, 4)
		g := Upstream(s, 4)
		wantDK := BackwardDK(s, w, g)
		dwSum := make([]float64, s.C*s.T)
		for r := 0; r < s.Rows(); r++ {
			c := r % s.C
			dk, dwrow := modelFloat4(s.T, widen(w[c*s.T:(c+1)*s.T]), widen(k[r*s.T:(r+1)*s.T]), widen(g[r*s.T:(r+1)*s.T]))
			compareModel(t, "dk "+s.String(), dk, wantDK[r*s.T:(r+1)*s.T])
			for j := range dwrow {
				dwSum[c*s.T+j] += dwrow[j]
			}
		}
		compareModel(t, "dw "+s.String(), dwSum, BackwardDW(s, k, g))
	}
}

// f32Op is the CPU op with a float32 forward that accumulates like the naive kernel: a stand-in for
// the GPU op, to show that autograd.Float32Check's step and bounds suit a float32 forward.
type f32Op struct{ CPUOp }

func (o f32Op) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	s := o.Shape
	w, k := mustValues(in[0]), mustValues(in[1])
	out := make([]float64, s.Len())
	for r := 0; r < s.Rows(); r++ {
		c := r % s.C
		for t := 0; t < s.T; t++ {
			acc := float32(o.Eps)
			for u := 0; u <= t; u++ {
				acc += float32(w[c*s.T+(s.T-1)-(t-u)]) * float32(k[r*s.T+u])
			}
			out[r*s.T+t] = float64(acc)
		}
	}
	ctx.SaveForBackward(in[0], in[1])
	return autograd.New("out", out, s.B, s.C, s.T), nil
}

func TestFloat32CheckSuitsAFloat32Forward(t *testing.T) {
	for _, s := range append(GradCheckShapes, Shape{B: 2, C: 2, T: 64}) {
		w, k := InputTensors(s, 13)
		op := f32Op{CPUOp{Shape: s, Eps: Eps}}
		res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
			return TrainingLoss(tp, op, in[0], in[1])
		}, []*autograd.Tensor{w, k}, autograd.Float32Check)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Errorf("%v: %v: %v", s, res, res.Err())
		}
		t.Logf("%v: %v", s, res)
		// and the wrong dk still fails under the float32 bounds
		bad := wrongDK{CPUOp{Shape: s, Eps: Eps}}
		res, err = autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
			return TrainingLoss(tp, bad, in[0], in[1])
		}, []*autograd.Tensor{w, k}, autograd.Float32Check)
		if err != nil || res.OK {
			t.Errorf("%v: a wrong dk passed the float32 gradcheck (%v, %v)", s, res, err)
		}
	}
}

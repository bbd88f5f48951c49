package oneflow

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/half"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

var h100 = gpu.DeviceInfo{Name: "test H100", SMs: 132, MaxThreadsPerSM: 2048, MaxThreadsPerBlock: 1024}

type ptr uintptr

func (p ptr) DevicePtr() uintptr { return uintptr(p) }

func TestRoundHalfMatchesHalfPackage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, 1, -1, 65504, 65519, 65520, 1e-8, 3e-8, 6.1e-5, 5.96e-8, 2.98e-8, 0.1, 2049, 2051}
	for i := 0; i < 200000; i++ {
		vals = append(vals, float32(math.Ldexp(r.Float64()*2-1, r.IntN(50)-30)))
	}
	for _, v := range vals {
		if got, want := RoundHalf(float64(v)), half.FromFloat32(v).Float64(); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("RoundHalf(%g) = %g, binary16 gives %g", v, got, want)
		}
	}
}

func TestHalfSumStalls(t *testing.T) {
	if got := SeqHalfSum(1, 5000); got != 2048 {
		t.Errorf("adding 1 to a half 5000 times gives %g, want 2048 (2049 is not a half and ties to even)", got)
	}
	if got := SeqFloatSum(1, 1<<25); got != 1<<24 {
		t.Errorf("float32 sum stalls at %g, want 2^24", got)
	}
	m := PinnedDotModel(DotN)
	if h := m.Want[AtomicSteps[0].Name]; h != 32 {
		t.Errorf("pinned half sum of 32M products of 0.1: %g, want 32 (spacing 1/32 over twice 0.01)", h)
	}
	if h2 := m.Want[AtomicSteps[1].Name]; h2 != 64 {
		t.Errorf("pinned half2 sum: %g, want 64 (two lanes stalled at 32)", h2)
	}
	if math.Abs(m.Truth-335380.4) > 1 {
		t.Errorf("float64 answer %g", m.Truth)
	}
	f := m.Want[AtomicSteps[3].Name]
	if rel := math.Abs(f-m.Truth) / m.Truth; rel > 1e-2 || rel == 0 {
		t.Errorf("block-reduce float model %g vs %g: relative error %g, want small but nonzero", f, m.Truth, rel)
	}
}

func TestNumBlocks(t *testing.T) {
	for _, c := range []struct{ work, want int }{{0, 1}, {1, 1}, {256, 1}, {257, 2}, {1 << 20, 4096}, {1 << 30, 132 * 8 * Waves}} {
		if got := NumBlocks(h100, c.work); got != c.want {
			t.Errorf("NumBlocks(%d) = %d, want %d", c.work, got, c.want)
		}
	}
}

func TestPlanMul(t *testing.T) {
	packed, naive := MulSteps[1], MulSteps[0]
	l, err := PlanMul(h100, packed, F16, 1000, ptr(256), ptr(512), ptr(1024))
	if err != nil || l.Kernel != "mul_packed_f16" || l.Pack != 8 || l.Grid != 1 {
		t.Errorf("aligned half: %+v %v", l, err)
	}
	l, err = PlanMul(h100, packed, F32, 1000, ptr(256), ptr(514), ptr(1024))
	if err != nil || l.Kernel != "mul_pack1_f32" || !strings.Contains(l.Note, "aligned") {
		t.Errorf("misaligned float: %+v %v", l, err)
	}
	if _, err := PlanMul(h100, naive, F32, math.MaxInt32+1, ptr(0), ptr(0), ptr(0)); err == nil || !strings.Contains(err.Error(), "2147483647") {
		t.Errorf("naive over int: %v", err)
	}
	if _, err := PlanMul(h100, packed, F32, -1, ptr(0), ptr(0), ptr(0)); err == nil {
		t.Error("negative n accepted")
	}
	if l, err := PlanMul(h100, naive, F32, 0, ptr(0), ptr(0), ptr(0)); err != nil || l.Grid != 1 {
		t.Errorf("empty: %+v %v", l, err)
	}
}

func TestUpsampleValidationAndPlan(t *testing.T) {
	if err := ValidateUpsample([4]int{1, 1, -1, 4}); err == nil {
		t.Error("negative dimension accepted")
	}
	if err := ValidateUpsample([4]int{0, 3, 4, 4}); err != nil {
		t.Errorf("empty tensor refused: %v", err)
	}
	if err := ValidateUpsample([4]int{64, 64, 512, 512}); err == nil || !strings.Contains(err.Error(), "2147483647") {
		t.Errorf("too large: %v", err)
	}
	l, err := PlanUpsample(h100, UpSteps[1], F32, Backward, [4]int{1, 1, 3, 5}, ptr(264))
	if err != nil || l.Generic || l.Kernel != "up2x_bwd_f32" {
		t.Errorf("aligned: %+v %v", l, err)
	}
	l, err = PlanUpsample(h100, UpSteps[1], F32, Forward, [4]int{1, 1, 3, 5}, ptr(260))
	if err != nil || !l.Generic || l.Kernel != "up_generic_fwd_f32" || l.Note == "" {
		t.Errorf("misaligned float forward should fall back: %+v %v", l, err)
	}
	l, err = PlanUpsample(h100, UpSteps[1], F16, Forward, [4]int{1, 1, 3, 5}, ptr(258))
	if err != nil || !l.Generic {
		t.Errorf("misaligned half forward should fall back: %+v %v", l, err)
	}
	if _, err := PlanUpsample(h100, UpSteps[1], F16, "sideways", [4]int{1, 1, 3, 5}, ptr(0)); err == nil {
		t.Error("bad direction accepted")
	}
}

func TestUpsampleReferences(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6} // (1,1,2,3)
	y := UpForwardReference(x, [4]int{1, 1, 2, 3})
	want := []float64{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}
	for i := range want {
		if y[i] != want[i] {
			t.Fatalf("forward[%d] = %g, want %g", i, y[i], want[i])
		}
	}
	// The backward is the adjoint of the forward: <up(x), dy> = <x, up^T(dy)>.
	shape := [4]int{2, 3, 5, 7}
	xs := RandomValues(F32, 2*3*5*7, 1)
	dy := RandomValues(F32, 4*len(xs), 2)
	fx, bx := UpForwardReference(xs, shape), UpBackwardReference(dy, shape)
	var a, b float64
	for i := range fx {
		a += fx[i] * float64(dy[i])
	}
	for i := range bx {
		b += float64(xs[i]) * bx[i]
	}
	if math.Abs(a-b) > 1e-9*math.Abs(a)+1e-12 {
		t.Errorf("adjoint test: %g vs %g", a, b)
	}
}

func TestExercisesCompile(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	for _, c := range []struct {
		ex   lab.Exercise
		code string
	}{{Exercise1, Exercise1.Starter}, {Exercise1, solutionCode(t, Exercise1)}, {Exercise2, Exercise2.Starter}, {Exercise2, solutionCode(t, Exercise2)}} {
		for _, arch := range []string{"compute_80", "compute_90"} {
			res, err := compile.PTX(compile.Source{Name: "ex.cu", Code: c.code}, compile.Options{Arch: arch})
			if err != nil {
				t.Fatalf("exercise %d: %v", c.ex.Number, err)
			}
			if !strings.Contains(res.PTX, ".entry "+c.ex.Kernel+"(") {
				t.Errorf("exercise %d: no kernel %s", c.ex.Number, c.ex.Kernel)
			}
		}
	}
}

func syntheticRun() *record.Run {
	run := &record.Run{Lesson: ID, Receipt: record.Receipt{CopyGBps: 3000, PeakGFLOPS: 60000}}
	for _, d := range DTypes {
		for i, v := range []string{"naive", "packed", "packed, misaligned (pack 1)", "PyTorch torch.mul", TorchCompile} {
			run.Add(record.Record{Case: "mul", Variant: v, DType: string(d), MedianMS: 0.1 + 0.01*float64(i), PctBW: 90, GBps: 2700, GFLOPs: 300, Size: MulN, Correct: true})
			run.Add(record.Record{Case: "mul sweep", Variant: v, DType: string(d), MedianMS: 0.1, Size: MulN})
		}
	}
	for i, s := range AtomicSteps {
		run.Add(record.Record{Case: "atomics", Variant: s.Name, MedianMS: 200 / float64(i+1), Correct: true, Note: "result 32, model 32"})
		run.Add(record.Record{Case: "drift", Variant: s.Name, RelL2: 0.9, Note: "32|335380.4"})
	}
	for _, shape := range [][4]int{ArticleShape, LargeShape} {
		for _, d := range DTypes {
			for _, dir := range []string{Forward, Backward} {
				for _, v := range []string{"generic", "pack2x", "PyTorch", TorchCompile} {
					run.Add(record.Record{Case: "upsample " + dir, Variant: v, DType: string(d), Size: int64(shape[0] * shape[1] * shape[2] * shape[3]), MedianMS: 0.05, PctBW: 80, GFLOPs: 10, Kind: "kernel", Correct: true})
				}
			}
		}
	}
	return run
}

func TestTablesFiguresTargets(t *testing.T) {
	for _, run := range []*record.Run{syntheticRun(), {Lesson: ID}} {
		tabs := Tables(run)
		if len(tabs) < 6 {
			t.Errorf("%d tables", len(tabs))
		}
		for _, tb := range tabs {
			if tb.Text() == "" {
				t.Errorf("empty table %q", tb.Title)
			}
		}
		if _, err := Figures(run); err != nil {
			t.Errorf("figures: %v", err)
		}
		if n := len(Targets(run)); n != 17 { // 11 targets and 6 beside them (torch.compile)
			t.Errorf("%d targets, want 17", n)
		}
	}
	var met int
	for _, g := range Targets(syntheticRun()) {
		if !g.Known {
			t.Errorf("target %q unknown on a full run", g.Goal)
		}
		if g.Met {
			met++
		}
	}
	if met == 0 {
		t.Error("no target met on the synthetic run")
	}
}

// solutionCode is exercise x's reference solution.
func solutionCode(t testing.TB, x lab.Exercise) string {
	t.Helper()
	code, err := x.Solution()
	if err != nil {
		t.Fatal(err)
	}
	return code
}

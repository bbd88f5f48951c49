package kernelbench

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// cpuRef is a float64 reference of the softmax and matmul problems on n batch slices, for the
// fakes below (the command uses the lessons' references).
func cpuRef(p Problem, t [][]float32, n int) ([]float64, error) {
	switch p.Op {
	case Softmax:
		cols := p.Out[1]
		out := make([]float64, 0, n*cols)
		for r := 0; r < n; r++ {
			row := t[0][r*cols : (r+1)*cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, float64(v))
			}
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v) - m)
			}
			for _, v := range row {
				out = append(out, math.Exp(float64(v)-m)/s)
			}
		}
		return out, nil
	case MatMul:
		k, cols := p.Tensors[0].Shape[1], p.Out[1]
		out := make([]float64, n*cols)
		for r := 0; r < n; r++ {
			for j := 0; j < cols; j++ {
				var s float64
				for q := 0; q < k; q++ {
					s += float64(t[0][r*k+q]) * float64(t[1][q*cols+j])
				}
				out[r*cols+j] = s
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no fake reference for %s", p.Op)
}

// fakeKernel turns the exact output of a slice (float32) into what a kernel of ours returns.
type fakeKernel struct {
	name      string
	ms        float64
	apply     func(exact []float32)
	nonFinite int // NaN left outside the slices
}

var (
	exact  = fakeKernel{name: "exact", ms: 1, apply: func([]float32) {}}
	zeros  = fakeKernel{name: "zeros", ms: 0.5, apply: func(y []float32) { clear(y) }}
	noisy  = fakeKernel{name: "1e-3 off", ms: 0.25, apply: func(y []float32) { scaleEvery(y, 1+1e-3) }}
	unwrit = fakeKernel{name: "one unwritten", ms: 0.8, apply: func([]float32) {}, nonFinite: 1}
)

func scaleEvery(y []float32, f float64) {
	for i := range y {
		y[i] = float32(float64(y[i]) * f)
	}
}

// fakeBackend runs problems on the CPU: each kernel returns the exact slices, transformed.
type fakeBackend struct {
	free    int64
	kernels []fakeKernel
	loads   int
}

func (b *fakeBackend) Memory(p Problem) (int64, int64, error) { return p.TensorBytes(), b.free, nil }

func (b *fakeBackend) Open(p Problem) (Impl, error) { return &fakeImpl{b: b, p: p}, nil }

func (b *fakeBackend) Reference(p Problem, t [][]float32, n int) ([]float64, error) {
	return cpuRef(p, t, n)
}

type fakeImpl struct {
	b       *fakeBackend
	p       Problem
	tensors [][]float32
}

func (m *fakeImpl) Variants() []Variant {
	var out []Variant
	for _, k := range m.b.kernels {
		out = append(out, Variant{Name: k.name, DType: "float32", Tol: check.FP32})
	}
	return out
}

func (m *fakeImpl) Load(t [][]float32) error { m.tensors, m.b.loads = t, m.b.loads+1; return nil }

func (m *fakeImpl) Output(v int, idx []int) ([]float32, int, error) {
	in := SliceInputs(m.p, m.tensors, idx)
	want, err := cpuRef(m.p, in, len(idx))
	if err != nil {
		return nil, 0, err
	}
	got := make([]float32, len(want))
	for i, w := range want {
		got[i] = float32(w)
	}
	k := m.b.kernels[v]
	k.apply(got)
	return got, k.nonFinite, nil
}

func (m *fakeImpl) Measure(v int) (record.Record, error) {
	k := m.b.kernels[v]
	return record.Record{Variant: k.name, MedianMS: k.ms, MinMS: k.ms, MaxMS: k.ms}, nil
}

func (m *fakeImpl) Free() {}

// fakeTorch is the PyTorch script played in Go: it reads each trial's input files, writes the exact
// float32 output where the script would, and reports eager and compiled times.
func fakeTorch(eager, compiled float64) TorchFunc {
	return func(s string, args, result any) error {
		if s != script || !strings.Contains(s, "load_state_dict") {
			return errors.New("not the kernelbench script")
		}
		a := args.(torchArgs)
		p := a.Problem
		for _, tr := range a.Trials {
			var in [][]float32
			for i, path := range tr.Inputs {
				x, err := torch.ReadFloats(path, prod(tr.Shapes[i]))
				if err != nil {
					return err
				}
				in = append(in, x)
			}
			want, err := cpuRef(p, in, tr.Shapes[0][0])
			if err != nil {
				return err
			}
			out := make([]float32, len(want))
			for i, w := range want {
				out[i] = float32(w)
			}
			if err := torch.WriteFloats(tr.Out, out); err != nil {
				return err
			}
		}
		r := result.(*torchResult)
		r.Trials = len(a.Trials)
		r.Eager = &torch.Timing{MedianMS: eager, MinMS: eager, MaxMS: eager}
		r.Compile = &torch.Timing{MedianMS: compiled, MinMS: compiled, MaxMS: compiled}
		r.TF32 = map[string]bool{"matmul": a.MatmulTF32, "cudnn": a.CudnnTF32}
		return nil
	}
}

func variant(t *testing.T, r Result, name string) VariantResult {
	t.Helper()
	for _, v := range r.Variants {
		if v.Variant.Name == name {
			return v
		}
	}
	t.Fatalf("%s: no variant %q in %+v", r.ID, name, r)
	return VariantResult{}
}

// On a softmax with long rows, zeros pass KernelBench's rule and fail the float64 check; the exact
// kernel passes both; an element left unwritten outside the compared slices is caught by the NaN
// scan only.
func TestRunSoftmaxBothVerdicts(t *testing.T) {
	p := SmallProblems()[2]
	b := &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact, zeros, unwrit}}
	cfg := Config{Trials: 3, Dir: t.TempDir(), Torch: fakeTorch(4, 2)}
	r := RunProblem(p, b, cfg)
	if !r.Ran() {
		t.Fatalf("did not run: %+v", r)
	}
	if b.loads != 3 || r.Trials != 3 || r.SlicesPerTrial != 4 || r.Eager.Median != 4 || r.Compile.Median != 2 {
		t.Errorf("loads %d, trials %d, slices %d, eager %v, compile %v", b.loads, r.Trials, r.SlicesPerTrial, r.Eager, r.Compile)
	}
	if r.TorchRelL2 < 0 || r.TorchRelL2 > 1e-7 {
		t.Errorf("PyTorch (float32 of the float64 reference) against float64: %g", r.TorchRelL2)
	}
	ex := variant(t, r, "exact")
	if !ex.KB.Correct || ex.KB.Passed != 3 || ex.KB.PassedNow != 3 || !ex.Float64.OK || ex.Float64.Passed != 3 {
		t.Errorf("exact: %+v %+v", ex.KB, ex.Float64)
	}
	z := variant(t, r, "zeros")
	if !z.KB.Correct || z.Float64.OK || z.Float64.Passed != 0 || z.Float64.Why == "" {
		t.Errorf("zeros: KernelBench %+v (want correct), float64 %+v (want FAIL)", z.KB, z.Float64)
	}
	u := variant(t, r, "one unwritten")
	if !u.KB.Correct || u.Float64.OK || u.Float64.NonFinite != 3 || !strings.Contains(u.Float64.Why, "NaN") {
		t.Errorf("unwritten: KernelBench %+v, float64 %+v", u.KB, u.Float64)
	}
}

// On a matmul, 1e-3 relative error passes KernelBench's 1e-2 and fails its 1e-4 and the float64
// check; fast_p scores the first (float32) kernel, and the fastest accepted one separately.
func TestRunMatMulAndFastP(t *testing.T) {
	ps := SmallProblems()[:2]
	b := &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact, noisy}}
	results := Run(ps, b, Config{Trials: 2, Dir: t.TempDir(), Torch: fakeTorch(3, 1.5)})
	for _, r := range results {
		n := variant(t, r, "1e-3 off")
		if !n.KB.Correct || n.KB.PassedNow != 0 || n.Float64.OK || n.KB.MaxAbs <= 0 {
			t.Errorf("%s 1e-3 off: KernelBench %+v, float64 %+v", r.ID, n.KB, n.Float64)
		}
		if ex := variant(t, r, "exact"); !ex.KB.Correct || !ex.Float64.OK {
			t.Errorf("%s exact: %+v %+v", r.ID, ex.KB, ex.Float64)
		}
	}
	rows := FastPTable(results, FastPs())
	// exact runs at 1 ms: 3x eager, 1.5x compile; the noisy one at 0.25 ms: 12x and 6x.
	want := map[float64][6]float64{1: {1, 1, 1, 1, 1, 1}, 1.5: {1, 0, 1, 0, 1, 1}, 2: {1, 0, 1, 0, 1, 1}}
	for _, row := range rows {
		w := want[row.P]
		got := []*float64{row.KBEager, row.KBCompile, row.F64Eager, row.F64Compile, row.AnyEager, row.AnyCompile}
		for i, g := range got {
			if g == nil || *g != w[i] {
				t.Errorf("fast_%g column %d: %v, want %g", row.P, i, g, w[i])
			}
		}
	}
}

func TestRunWithoutTorch(t *testing.T) {
	p := SmallProblems()[2]
	r := RunProblem(p, &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact}}, Config{Trials: 2, TorchWhy: "no torch here"})
	if !r.Ran() || r.Eager != nil || !strings.Contains(r.TorchNote, "no torch here") {
		t.Fatalf("%+v", r)
	}
	v := r.Variants[0]
	if v.KB.Available || v.KB.Correct || !v.Float64.OK {
		t.Errorf("KernelBench %+v, float64 %+v", v.KB, v.Float64)
	}
	rows := FastPTable([]Result{r}, FastPs())
	if rows[0].KBEager != nil || rows[0].F64Compile != nil {
		t.Errorf("fast_p without a baseline: %+v", rows[0])
	}
}

func TestRunTorchFails(t *testing.T) {
	p := SmallProblems()[0]
	fail := func(string, any, any) error {
		return errors.New("the PyTorch baseline failed (exit status 1): CUDA out of memory\ntraceback")
	}
	r := RunProblem(p, &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact}}, Config{Trials: 1, Dir: t.TempDir(), Torch: fail})
	if !r.Ran() || !strings.Contains(r.TorchNote, "out of memory") || strings.Contains(r.TorchNote, "traceback") {
		t.Fatalf("torch note %q", r.TorchNote)
	}
	if r.Variants[0].KB.Available || !r.Variants[0].Float64.OK {
		t.Errorf("%+v", r.Variants[0])
	}
}

// A problem that does not fit is refused before anything is allocated, naming both byte counts; it
// still counts in fast_p's denominator.
func TestMemoryRefusal(t *testing.T) {
	p := Problems()[2]
	b := &fakeBackend{free: 6 << 30, kernels: []fakeKernel{exact}}
	r := RunProblem(p, b, Config{Trials: 1, Dir: t.TempDir()})
	if r.Ran() || b.loads != 0 || !strings.Contains(r.Refused, "12.00 GiB") || !strings.Contains(r.Refused, "12884901888 bytes") ||
		!strings.Contains(r.Refused, "6.00 GiB") {
		t.Fatalf("refusal %q", r.Refused)
	}
	if err := MemoryRefusal(p, 100, 200); err != nil {
		t.Errorf("fits: %v", err)
	}
	if err := MemoryRefusal(p, 300, 200); !errors.Is(err, ErrRefused) {
		t.Errorf("does not fit: %v", err)
	}
	ok := RunProblem(SmallProblems()[2], &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact}}, Config{Trials: 1, Dir: t.TempDir(), Torch: fakeTorch(2, 2)})
	rows := FastPTable([]Result{ok, r}, []float64{1})
	if rows[0].KBEager == nil || *rows[0].KBEager != 0.5 {
		t.Errorf("fast_1 with one of two problems refused: %v", rows[0].KBEager)
	}
}

// The tables show a row per variant with both verdicts, a row for a refused problem, and fast_p;
// the receipt saves and loads.
func TestTablesAndReport(t *testing.T) {
	b := &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact, zeros}}
	ok := RunProblem(SmallProblems()[2], b, Config{Trials: 2, Dir: t.TempDir(), Torch: fakeTorch(2, 1)})
	refused := RunProblem(Problems()[5], &fakeBackend{free: 1 << 30}, Config{Trials: 2})
	rep := NewReport(record.Receipt{Method: "CUDA events"}, "abc1234", 2, []Result{ok, refused})
	tabs := Tables(rep)
	if len(tabs) != 2 {
		t.Fatalf("%d tables", len(tabs))
	}
	res := tabs[0]
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows, want 2 variants and a refused problem:\n%s", len(res.Rows), res.Text())
	}
	text := res.Text()
	for _, want := range []string{"L1-23 Softmax", "correct 2/2; 2/2", "pass 2/2", "FAIL 0/2", "4 rows x 2 trials", "2.00x", "refused (see below)",
		"L1-63 refused: needs 8.97 GiB", "allclose(reference, ours, atol=rtol=1e-2)", "within 1e-4", "abc1234"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	fp := tabs[1].Text()
	if !strings.Contains(fp, "0.50 (1/2)") || !strings.Contains(fp, "fast_p over 2 problems") {
		t.Errorf("fast_p table:\n%s", fp)
	}
	path := filepath.Join(t.TempDir(), "out", "kernelbench.json")
	if err := rep.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Commit != "abc1234" || back.KernelBench.Commit != SourceCommit || len(back.Results) != 2 || back.Results[1].Refused == "" ||
		len(back.FastP) != len(FastPs()) || back.Results[0].Variants[1].Float64.OK {
		t.Errorf("round trip: %+v", back)
	}
}

// A NaN in a comparison's error (a kernel that writes NaN into the slices) still saves: the JSON
// has no NaN, the verdict says it failed.
func TestNonFiniteSaves(t *testing.T) {
	nanK := fakeKernel{name: "nan", ms: 1, apply: func(y []float32) {
		for i := range y {
			y[i] = float32(math.NaN())
		}
	}}
	r := RunProblem(SmallProblems()[2], &fakeBackend{free: 1 << 40, kernels: []fakeKernel{nanK}}, Config{Trials: 1, Dir: t.TempDir(), Torch: fakeTorch(1, 1)})
	v := r.Variants[0]
	if v.Float64.OK || v.KB.Correct || v.Float64.WorstRelL2 != -1 || v.KB.MaxAbs != -1 {
		t.Errorf("NaN outputs: %+v %+v", v.Float64, v.KB)
	}
	if err := NewReport(record.Receipt{}, "", 1, []Result{r}).Save(filepath.Join(t.TempDir(), "r.json")); err != nil {
		t.Error(err)
	}
}

// Reports of one GPU and commit merge into one in the catalog's order, fast_p over all of them;
// another GPU, another commit or a problem run twice is an error naming it.
func TestMergeReports(t *testing.T) {
	b := &fakeBackend{free: 1 << 40, kernels: []fakeKernel{exact, zeros}}
	soft := RunProblem(SmallProblems()[2], b, Config{Trials: 2, Dir: t.TempDir(), Torch: fakeTorch(2, 1)})
	refused := RunProblem(Problems()[5], &fakeBackend{free: 1 << 30}, Config{Trials: 2})
	gpu := func(name, date string) record.Receipt {
		r := record.Receipt{Method: "CUDA events", Date: date}
		r.Device.Name = name
		return r
	}
	a := NewReport(gpu("H200", "2026-11-27T10:00:00Z"), "abc1234", 2, []Result{refused})
	c := NewReport(gpu("H200", "2026-11-27T11:00:00Z"), "abc1234", 2, []Result{soft})
	m, err := MergeReports(a, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Results) != 2 || m.Results[0].ID != "L1-23" || m.Results[1].ID != "L1-63" || m.Receipt.Date != "2026-11-27T11:00:00Z" {
		t.Errorf("merged: %d results %v, date %s", len(m.Results), []string{m.Results[0].ID, m.Results[1].ID}, m.Receipt.Date)
	}
	if !strings.Contains(Tables(m)[1].Text(), "fast_p over 2 problems") {
		t.Errorf("fast_p of the merged report:\n%s", Tables(m)[1].Text())
	}
	for _, bad := range []struct {
		reps []Report
		want string
	}{
		{[]Report{a, NewReport(gpu("H100", ""), "abc1234", 2, []Result{soft})}, "one GPU per record"},
		{[]Report{a, NewReport(gpu("H200", ""), "def5678", 2, []Result{soft})}, "one commit per record"},
		{[]Report{a, a}, "L1-63 is in two of the reports"},
		{nil, "no report"},
	} {
		if _, err := MergeReports(bad.reps...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("merging %d reports: %v, want %q", len(bad.reps), err, bad.want)
		}
	}
}

// Run hands the results so far to Finished after each problem, refused ones included.
func TestRunFinishedAfterEachProblem(t *testing.T) {
	b := &fakeBackend{free: 1 << 30, kernels: []fakeKernel{exact}}
	var counts []int
	cfg := Config{Trials: 1, Dir: t.TempDir(), Finished: func(done []Result) { counts = append(counts, len(done)) }}
	res := Run([]Problem{SmallProblems()[2], Problems()[5]}, b, cfg)
	if len(res) != 2 || !slices.Equal(counts, []int{1, 2}) {
		t.Errorf("%d results, Finished saw %v, want [1 2]", len(res), counts)
	}
}

func TestCounted(t *testing.T) {
	for _, c := range []struct {
		n    int
		name string
		want string
	}{{1, "image", "1 image"}, {4, "row", "4 rows"}, {2, "batch", "2 batches"}, {3, "sample", "3 samples"}} {
		if got := Counted(c.n, c.name); got != c.want {
			t.Errorf("Counted(%d, %q) = %q, want %q", c.n, c.name, got, c.want)
		}
	}
}

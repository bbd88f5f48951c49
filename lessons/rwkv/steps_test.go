package rwkv

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// h100 are the device facts the plans use (shared memory limits, compute capability).
var h100 = gpu.DeviceInfo{Name: "H100", Major: 9, Minor: 0, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10,
	MaxThreadsPerBlock: 1024, SMs: 132}

func TestPlansAcceptTheArticleShape(t *testing.T) {
	for _, st := range Steps {
		l, err := st.Plan(ArticleShape, h100)
		if err != nil {
			t.Errorf("%s: %v", st.Name, err)
			continue
		}
		if err := gpu.CheckConfig(h100, gpu.KernelAttrs{}, l.Config); err != nil {
			t.Errorf("%s: launch %+v: %v", st.Name, l.Config, err)
		}
	}
}

// Every limit is refused before launch with an error that names it.
func TestPlansRefuseWhatTheyCannotTake(t *testing.T) {
	cases := []struct {
		step  string
		shape Shape
		want  string
	}{
		{"v0", Shape{1, 1, 1025}, "T <= 1024"},
		{"v1", Shape{1, 1, 2048}, "T <= 1024"},
		{"v2", Shape{1, 1, 6}, "T % 4 == 0"},
		{"v3", Shape{4, 1, 8}, "B % 8 == 0"},
		{"v3", Shape{8, 1, 10}, "T % 4 == 0"},
		{"v4", Shape{8, 1, 12}, "T % 8 == 0"},
		{"v4", Shape{12, 1, 16}, "B % 8 == 0"},
		{"v5", Shape{1, 1, 4096}, "shared memory"},
		{"v6", Shape{16, 1, 64}, "B % 32 == 0"},
		{"v6", Shape{32, 1, 48}, "T % 32 == 0"},
		{"v6", Shape{32, 1, 2048}, "shared memory"},
		{"v7", Shape{32, 1, 48}, "T % 32 == 0"},
		{"v7", Shape{8, 1, 64}, "B % 32 == 0"},
		{"v8", Shape{32, 1, 48}, "T % 32 == 0"},
		{"v8", Shape{8, 1, 64}, "B % 32 == 0"},
		{"v8", Shape{32, 1, 2048}, "shared memory"},
	}
	for _, c := range cases {
		st, err := StepByName(c.step)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Plan(c.shape, h100)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %v: error %v, want one naming %q", st.Name, c.shape, err, c.want)
		}
	}
	old := h100
	old.Major = 7
	for _, st := range Steps[6:] {
		if _, err := st.Plan(ArticleShape, old); err == nil || !strings.Contains(err.Error(), "8.0") {
			t.Errorf("%s on compute capability 7.0: %v", st.Name, err)
		}
	}
	if err := Steps[0].Validate(Shape{0, 1, 1}, h100); err == nil {
		t.Error("an empty shape must be refused")
	}
}

func TestV5LayoutIsConflictFreeAndAligned(t *testing.T) {
	for T := 1; T <= 1700; T += 7 {
		tpad, s, bytes := V5Layout(T)
		if tpad < T || tpad%V5Tile != 0 || s%32 != 4 || s < tpad+V5Tile || s%4 != 0 || bytes != 4*(tpad+V5Rows*s) {
			t.Fatalf("T=%d: Tpad %d, S %d, bytes %d", T, tpad, s, bytes)
		}
	}
}

func TestV6Warps(t *testing.T) {
	for _, c := range []struct{ T, want int }{{32, 1}, {64, 1}, {768, 12}, {1024, 16}, {1440, 12}} {
		if got := V6Warps(c.T); got != c.want {
			t.Errorf("T=%d: %d warps, want %d", c.T, got, c.want)
		}
	}
}

func TestV8Layout(t *testing.T) {
	for _, c := range []struct{ T, tile, warps, bytes int }{
		{32, 32, 1, 4*(32*36+64+32) + 16}, {96, 32, 3, 4*(32*100+64+96) + 48},
		{768, 64, 6, 102336}, {1024, 64, 6, 4*(32*1028+64+1024) + 256}, {1440, 32, 6, 4*(32*1444+64+1440) + 16*45},
	} {
		if tile, w, b := V8Tile(c.T), V8Warps(c.T), V8Shared(c.T); tile != c.tile || w != c.warps || b != c.bytes {
			t.Errorf("T=%d: tile %d, %d consumer warps, %d bytes; want %d, %d, %d", c.T, tile, w, b, c.tile, c.warps, c.bytes)
		}
	}
	// Two blocks of the article's shape fit an H100 SM (228 KB, 1 KB reserved per block).
	if b := V8Shared(ArticleShape.T); 2*(b+1024) > 228<<10 {
		t.Errorf("v8 at T=%d: %d bytes a block, two do not fit an SM", ArticleShape.T, b)
	}
}

func TestStepByName(t *testing.T) {
	for _, n := range []string{"v0", "v5", "v6 tensor core tf32", "v3 batch group"} {
		if _, err := StepByName(n); err != nil {
			t.Error(err)
		}
	}
	if _, err := StepByName("v9"); err == nil {
		t.Error("v9 must not exist")
	}
}

// In the no-GPU mode the exercises' solutions compile and say they need a GPU, and every untouched
// starter already fails from its PTX: exercise 1's declares no shared memory, exercise 2's stores
// nothing. The typical mistakes that the PTX shows fail too.
func TestExercisesWithoutGPU(t *testing.T) {
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.GPU() {
		t.Skip("GPU mode: the GPU test checks the exercises")
	}
	if len(Lesson.Exercises) != len(Exercises) {
		t.Fatalf("the lesson lists %d exercises, the package %d", len(Lesson.Exercises), len(Exercises))
	}
	for _, e := range Exercises {
		sol, err := e.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Check(env, sol)
		if err != nil || !r.Compiled || !r.Passed || r.Ran || !strings.Contains(r.Reason, "needs a GPU") {
			t.Errorf("%s, solution: %+v %v", e.Title, r, err)
		}
		r, err = e.Check(env, e.Starter)
		if err != nil || !r.Compiled || r.Passed || !strings.HasPrefix(r.Reason, "Not yet:") {
			t.Errorf("%s, starter: %+v %v", e.Title, r, err)
		}
		t.Logf("%s, starter: %s", e.Title, r.Reason)
		r, err = e.Check(env, `extern "C" __global__ void wrong_name() {}`)
		if err != nil || r.Passed || !strings.Contains(r.Reason, "defines no kernel "+e.Kernel) {
			t.Errorf("%s: a kernel with the wrong name: %+v %v", e.Title, r, err)
		}
		r, err = e.Check(env, sol+"\nthis is not CUDA\n")
		if err != nil || r.Passed || r.Compiled || !strings.HasPrefix(r.Reason, "It does not compile") || r.Log == "" {
			t.Errorf("%s: a compile error: %+v %v", e.Title, r, err)
		}
	}
	sol, err := Exercises[0].Solution()
	if err != nil {
		t.Fatal(err)
	}
	noSync := strings.Replace(sol, "__syncthreads();", "", 1)
	if r, err := Exercises[0].Check(env, noSync); err != nil || r.Passed || !strings.Contains(r.Reason, "never waits") {
		t.Errorf("exercise 1 without __syncthreads: %+v %v", r, err)
	}
}

// Tables, figures and targets render from a run, also one without PyTorch or backward records.
func TestTablesAndFigures(t *testing.T) {
	run := &record.Run{Lesson: ID}
	run.Add(record.Record{Case: "forward", Variant: Torch, Kind: "baseline", Note: "unavailable: no torch"})
	for i, st := range Steps {
		run.Add(record.Record{Case: "forward", Variant: st.Name, Kind: "kernel", DType: st.DType, MedianMS: 10 / float64(i+1), Correct: true, GFLOPs: 1000, PctFLOPs: 5})
		for _, T := range SweepTs(false) {
			run.Add(record.Record{Case: "sweep", Variant: st.Name, Kind: "kernel", Size: int64(T), MedianMS: float64(T) / 100 / float64(i+1)})
		}
	}
	for _, tab := range Tables(run)[:4] {
		if len(tab.Rows) == 0 || tab.Text() == "" {
			t.Errorf("table %q is empty", tab.Title)
		}
	}
	figs, err := Figures(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) < 4 {
		t.Errorf("%d figures", len(figs))
	}
	if tab := Targets(run); len(tab.Rows) != 7 { // 5 targets and 2 beside them (torch.compile)
		t.Errorf("targets: %d rows", len(tab.Rows))
	}
}

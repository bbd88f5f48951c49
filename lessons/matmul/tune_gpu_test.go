//go:build !nocuda

package matmul

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// The tuning test's shapes beyond the article's: products less than SmallK deep (the thin-K step),
// and the awkward shapes the any-shape step runs (every tile, with one slice and the plan's).
var (
	tuneThin  = []Shape{{4097, 4097, 1}, {4097, 64, 3}, {4097, 4097, 7}}
	tuneTiles = []Shape{{513, 129, 1025}, {255, 255, 255}, NonSquare, {4095, 4095, 4095}, {4097, 64, 16}}
)

// TestTune prints, in one device call (set MATMUL_TUNE=1; MATMUL_TUNE=article stops after 4096^3,
// and MATMUL_TUNE_ONLY=regexp times only the builds at 4096^3 whose names match), the measurements
// behind the steps' parameters that are still open, cuBLAS fp32 from the same run beside each: at
// 4096^3, step 6, step 7 as the ladder runs it and its tuning builds (WarpTileBuilds); the thin-K
// step on products less than 8 deep; on the awkward shapes, the step Multiply picks (Pick), then the
// any-shape step with each of Tiles in one slice and in that tile's plan's slices. Every kernel is
// checked on a NaN-poisoned output against the float64 reference before it is timed (a failed check
// is printed, not fatal); each line gives its time, rates, share of cuBLAS fp32's speed, error,
// registers, spills (local bytes), shared memory and occupancy.
func TestTune(t *testing.T) {
	if os.Getenv("MATMUL_TUNE") == "" {
		t.Skip("set MATMUL_TUNE=1")
	}
	env := labtest.Open(t)
	p, err := NewCheckedProblem(env, Article, Seed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	cub := tuneCuBLAS(env, p)
	fmt.Println("== 4096^3: step 6, step 7 as the ladder runs it (" + Steps[6].DepthNote(env.Device()) + "), and its tuning builds")
	only := regexp.MustCompile(os.Getenv("MATMUL_TUNE_ONLY"))
	for _, st := range tuneArticleSteps() {
		if only.MatchString(st.Name) {
			fmt.Println(tuneLine(t, p, st, cub))
		}
	}
	if os.Getenv("MATMUL_TUNE") == "article" {
		return
	}
	fmt.Println("== K < 8: the thin-K step (Multiply's pick)")
	for i, s := range tuneThin {
		tuneShape(t, env, s, uint64(500+i), []Step{ThinK}, cub)
	}
	fmt.Println("== the awkward shapes: Multiply's pick first, then every tile of the any-shape step in 1 slice and in its plan's slices")
	for i, s := range tuneTiles {
		tuneShape(t, env, s, uint64(520+i), anyShapeChoices(s, env.Device()), cub)
	}
}

// tuneCuBLAS times cuBLAS at every shape of the test, prints each variant at 4096^3 (with its error
// on the article's inputs) and fp32 at the others, and returns the fp32 medians by shape (empty,
// with the reason printed, without PyTorch).
func tuneCuBLAS(env *lab.Env, p *Problem) map[string]float64 {
	shapes := append(append([]Shape{Article}, tuneThin...), tuneTiles...)
	cub := map[string]float64{}
	tr, err := RunTorch(shapes, p, env.Bench.Method)
	if err != nil {
		fmt.Println("cuBLAS: " + err.Error())
		return cub
	}
	fmt.Println("== cuBLAS (torch " + tr.Torch + ")")
	for _, s := range shapes {
		for _, v := range TorchVariants {
			tm, ok := tr.Times[s.String()][v.Key]
			if !ok || (s != Article && v.Key != "fp32") {
				continue
			}
			if v.Key == "fp32" {
				cub[s.String()] = tm.MedianMS
			}
			fmt.Printf("%-46s %-15s %10s %6.1f TFLOP/s  relL2 %.2e\n", v.Name, s, show.MS(tm.MedianMS), s.FLOPs()/tm.MedianMS/1e9, tr.Cross[v.Key].RelL2)
		}
	}
	return cub
}

// tuneArticleSteps are the builds timed at 4096^3: step 6 (the last step without cp.async), step 7
// as the ladder runs it, and step 7's tuning builds.
func tuneArticleSteps() []Step {
	steps := []Step{Steps[5], Steps[6]}
	for _, b := range WarpTileBuilds() {
		steps = append(steps, b.Step())
	}
	return steps
}

// anyShapeChoices are the builds timed on s: the step Multiply picks (the any-shape step with its
// plan's tile and slices on these shapes), then the any-shape step with each of Tiles in one slice
// and in that tile's plan's slices (Tile.Slices) through the workspace, when they differ, and, on
// compute capability 9.0, in clusters of 4 and 8 for the tiles that take them.
func anyShapeChoices(s Shape, d gpu.DeviceInfo) []Step {
	out := []Step{Pick(s, d, true, true)}
	for _, t := range Tiles {
		out = append(out, AnyShapeWith(t, 1))
		if n := t.Slices(s, d); n > 1 {
			out = append(out, AnyShapeWith(t, n))
			if d.CC() >= 90 && t.Clusters() {
				out = append(out, AnyShapeClustered(t, 4), AnyShapeClustered(t, 8))
			}
		}
	}
	return out
}

// tuneShape prints a line for each step on a problem of shape s drawn from seed.
func tuneShape(t *testing.T, env *lab.Env, s Shape, seed uint64, steps []Step, cub map[string]float64) {
	p, err := NewCheckedProblem(env, s, seed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range steps {
		fmt.Println(tuneLine(t, p, st, cub))
	}
}

// tuneLine checks and times one step on p and formats the result: median, TFLOP/s, GB/s, share of
// cuBLAS fp32's speed, error, the launch (grid, block) and the compile report. A step that fails to
// run fails t (one whose check fails is timed and shown with ok=false).
func tuneLine(t *testing.T, p *Problem, st Step, cub map[string]float64) string {
	head := fmt.Sprintf("%-46s %-15s", st.Name, p.Shape)
	rec, err := p.measureAnyway("tune", st)
	var rep record.KernelReport
	if err == nil {
		rep, err = p.Report(st)
	}
	if err != nil {
		t.Errorf("%s on %v: %v", st.Name, p.Shape, err)
		return head + " error: " + err.Error()
	}
	cfg, _ := st.For(p.Shape, p.env.Device()).Plan(p.Shape, p.env.Device())
	vs := "    -"
	if c := cub[p.Shape.String()]; c > 0 {
		vs = fmt.Sprintf("%4.0f%%", 100*c/rec.MedianMS)
	}
	return fmt.Sprintf("%s %10s %6.1f TFLOP/s %6.0f GB/s %s of cuBLAS  relL2 %.1e ok=%-5v  grid %v block %v  regs %3d local %d smem %d+%d occ %.2f %s",
		head, show.MS(rec.MedianMS), rec.GFLOPs/1e3, rec.GBps, vs, rec.RelL2, rec.Correct, cfg.Grid, cfg.Block,
		rep.Registers, rep.LocalBytes, rep.StaticSharedBytes, rep.DynamicShared, rep.Occupancy, rep.Limiter)
}

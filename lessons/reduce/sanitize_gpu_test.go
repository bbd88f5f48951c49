//go:build !nocuda

package reduce

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/sanitize"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// TestSanitize is the package's part of the sanitizer pass (cmd/sanitize runs it alone under
// memcheck, racecheck and synccheck). It launches every kernel of kernels/reduce, each checked
// against its float64 reference on a NaN-poisoned output, on small awkward shapes that still reach
// the kernels' edges while keeping every launch to a few dozen blocks (racecheck slows a launch a
// hundredfold or more; only step 6 must fill every SM):
//   - every softmax step in every dtype on one element, rows of 37, a misaligned view (offset 1),
//     rows of 1000 (9 rows: a partial block of step 6) and rows of 4100 and 4104 (tails off the
//     vectors of 4 and 8 floats and off the blocks), so each kernel takes its vector and its
//     single-element path; then step 5 at each cluster size (2, 4 and 8 blocks on one or two rows
//     just past the smaller cluster's reach, 1 on the short rows);
//   - every layer norm step on one element, samples of 7, 1000 and 1028, a misaligned view, several
//     blocks per sample, step 4 over two groups of samples, step 5's warp and block kernels (the
//     block's past 48 KiB of shared memory), and step 6 on the shortest sample it takes (one block
//     per SM: two samples, each held by a team of half the SMs meeting at a grid barrier);
//   - the backward on its float4 and single-float paths (a misaligned view, M = 1, several blocks
//     per sample), the LayerNormOp on each path of its dispatch that small shapes reach (steps 5,
//     6 and 3; it picks step 4 only for samples of millions of floats, which step 4 runs above),
//     a finite-difference gradient check through it, and a sample near 1e30 on steps 5, 6 and 3
//     (the slow path of their statistics, for squared deviations past float32's range);
//   - both exercises' solutions through the exercises' launch (their own checks also run the
//     article's shape and time it), and exercise 2's starter, whose wrong merge the check must fail;
//   - softmax steps 8, 8b and 9 on long rows, rows off multiples of 4, views off 16 bytes and x
//     and y at different offsets (their single-float paths), step 8 at 1, 3 and 16 (persistent)
//     blocks per cluster (with part of the row in shared memory), and the softmax op forward and
//     backward on each path of its dispatch, with a finite-difference gradient check;
//   - util.cu's counters of non-finite values, on a poisoned output (all) and a checked one (none).
//
// The article's shapes, the timings and the notebook's Try cells (they time at the article's
// shapes) are left out.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	var ran []string

	for i, sh := range [][3]int{{1, 1, 0}, {3, 37, 0}, {4, 128, 1}, {9, 1000, 0}, {2, 4100, 0}, {2, 4104, 0}} {
		ran = append(ran, softmaxStepsOn(t, env, sh, uint64(100+i), SoftmaxSteps)...)
	}
	for i, sh := range [][3]int{{2, 32772, 0}, {1, 65540, 0}, {1, 131076, 0}} {
		ran = append(ran, softmaxStepsOn(t, env, sh, uint64(110+i), SoftmaxSteps[4:5])...)
	}
	// Steps 8, 8b and 9 on long and odd rows: step 8's 4-block clusters with part of each row in
	// shared memory, its persistent 16-block clusters walking more rows than fit at once (7 on an
	// H100; a view off 16 bytes), step 8b's row loop (more rows than clusters), and all three at
	// different offsets of x and y.
	for i, c := range []struct {
		sh    [3]int
		steps []SoftmaxStep
	}{{[3]int{20, 131077, 0}, SoftmaxSteps[7:8]}, {[3]int{8, 786433, 1}, SoftmaxSteps[7:8]}, {[3]int{40, 4099, 1}, SoftmaxSteps[8:10]}} {
		ran = append(ran, softmaxStepsOn(t, env, c.sh, uint64(115+i), c.steps)...)
	}
	// Step 11 in teams of several blocks walking more rows than their mailbox holds (slices of 4 KB:
	// teams of 20 blocks, 7 rows each, a ring of 4 and a mailbox of 6 rows), on a view off 16 bytes.
	ring, err := NewSoftmaxProblem(env, F32, 40, 20011, 117, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanGridRing(ring.Input(), RingPolicy{Threads: 256, SliceBytes: 4 << 10, MinTeams: 3, MaxSlots: 4})
	if err != nil {
		t.Fatal(err)
	}
	run, plan, _, err := ring.LaunchPlan(SoftmaxSteps[10], "", plan)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ring.CheckRun(run); err != nil || !res.OK || ring.RingFailed() != nil || plan.Team < 2 {
		t.Errorf("step 11 in teams (%s): %v %v %v", plan.Note, err, res.Err(), ring.RingFailed())
	}
	ring.Free()
	ran = append(ran, softmaxVariant(plan))
	for i, s := range SoftmaxSteps[7:11] {
		res, plan, err := unequalOffsets(env, s, 3, 4099, uint64(118+i))
		if err != nil || !res.OK {
			t.Errorf("%s at unequal offsets: %v %v", s.Name, err, res.Err())
		}
		ran = append(ran, softmaxVariant(plan))
	}
	// The hostile rows (attention masks, rows all -inf, +inf and NaN entries) through every step the
	// op dispatches to: the code that keeps masked parts at 0 runs under the sanitizer too.
	for i, c := range [][2]int{{3, 4099}, {5, 1001}, {6, 4099}, {7, 65537}, {8, 4099}, {9, 4099}, {10, 262145}} {
		d := F32
		if c[0] == 6 {
			d = F16
		}
		if err := hostileStep(env, SoftmaxSteps[c[0]], d, len(hostilePatterns), c[1], uint64(170+i)); err != nil && !refused(err) {
			t.Errorf("%s on the hostile rows (%d floats): %v", SoftmaxSteps[c[0]].Name, c[1], err)
		}
	}
	// The softmax op on each path of its dispatch, forward and backward (s10_backward.cu), and a
	// finite-difference gradient check through it.
	for i, c := range []struct {
		shape  []int
		offset int
	}{{[]int{3, 1001}, 1}, {[]int{2, 4099}, 0}, {[]int{1, 1500001}, 0}, {[]int{0, 5}, 0}} {
		r, err := SoftmaxOpCheck(env, c.shape, c.offset, uint64(160+i))
		if err != nil || !r.OK() {
			t.Errorf("softmax op %v: %v %v", c.shape, err, r)
		}
	}
	if res, _, err := SoftmaxGradCheckGPU(env, []int{2, 37}, 165, 0); err != nil || !res.OK {
		t.Errorf("softmax op gradcheck: %v %v", err, res.Err())
	}

	onChip := OnChipMax(env.Session.Device)
	long := onChip/4*4 + 4 // the shortest sample step 6 takes: too long for step 5, float4-able
	for i, sh := range [][3]int{{1, 1, 0}, {3, 7, 0}, {9, 1000, 0}, {4, 4100, 1}, {17, 1028, 0}, {2, 12292, 0}, {2, long, 0}} {
		ran = append(ran, lnStepsOn(t, env, sh, uint64(120+i))...)
	}
	for i, sh := range [][3]int{{2, 8, 0}, {3, 7, 0}, {3, 4100, 0}, {4, 4100, 1}, {5, 1, 0}} {
		checkLNBackward(t, env, sh, uint64(130+i))
	}
	ops := map[string]bool{}
	for i, c := range []struct {
		shape []int
		dims  int
	}{{[]int{2, 4, 3}, 2}, {[]int{3, 1001}, 1}, {[]int{2, 3, 1030}, 1}, {[]int{2, long}, 1}, {[]int{1, long + 1}, 1}, {[]int{0, 16}, 1}} {
		ops[checkLNOp(t, env, c.shape, c.dims, uint64(140+i))] = true
	}
	for _, s := range []LNStep{LNSteps[2], LNSteps[4], LNSteps[5]} {
		if !ops[s.Name] {
			t.Errorf("the layer norm op never ran %s (it ran %v)", s.Name, ops)
		}
	}
	gradcheckLNOp(t, env, []int{3, 7}, 1, 150, 4)
	// A sample near 1e30 (its squared deviations overflow float32) beside an ordinary one, dy near
	// 1e30 on it: the forward's slow path on step 5's warp and block kernels, step 6 and step 3's
	// finalize, and the backward's sums on it.
	for i, M := range []int{768, 1030, long, long + 1} {
		checkLNOpScaled(t, env, 2, M, []float32{1e30, 1}, []float32{1e30, 1}, uint64(155+i))
	}

	ran = append(ran, logSoftmaxSteps(t, env, false)...) // steps 9 and 11 compiled as log_softmax
	ran = append(ran, sanitizeExercises(t, env)...)
	sanitizeCounters(t, env)

	for _, v := range sanitizeVariants() {
		if !slices.Contains(ran, v) {
			t.Errorf("%s never ran", v)
		}
	}
	labtest.LaunchedEvery(t, kr.Kernels, env)
}

// sanitizeExercises runs each softmax exercise's solution, compiled from its own file, through the
// launch its check gives a reader's kernel, on small shapes, and exercise 2's starter, which must
// fail. (Exercise 3's solution is layer norm step 3's file, which the pass runs as that step.)
// It returns the variants that ran.
func sanitizeExercises(t *testing.T, env *lab.Env) []string {
	t.Helper()
	kernels, err := sanitize.KernelsOf(kr.Kernels)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, x := range Exercises {
		if x.Notebook == LayerNormNotebook {
			continue // exercise 3's solution is step 3's own file, sanitized as that step
		}
		i := slices.IndexFunc(kernels, func(k sanitize.Kernel) bool {
			return k.Name == x.Kernel && strings.HasPrefix(k.File, "solutions/")
		})
		if i < 0 {
			t.Errorf("exercise %d: no solution file defines %s", x.Number, x.Kernel)
			continue
		}
		src, err := kr.Source(kernels[i].File)
		if err != nil {
			t.Fatal(err)
		}
		if sol, err := x.Solution(); err != nil || sol != src.Code {
			t.Errorf("exercise %d: its Solution is not %s (%v)", x.Number, kernels[i].File, err)
		}
		step := exerciseStep(x.Kernel)
		step.File = kernels[i].File
		for j, sh := range [][3]int{{1, 1, 0}, {5, 37, 0}, {2, 4099, 1}} {
			ran = append(ran, softmaxStepsOn(t, env, sh, uint64(160+10*x.Number+j), []SoftmaxStep{step})...)
		}
	}

	x := Exercises[1]
	p, err := NewSoftmaxProblem(env, F32, 3, 37, 170, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	res, _, err := p.Check(exerciseStep(x.Kernel), x.Starter)
	if err != nil {
		t.Fatalf("exercise %d's starter: %v", x.Number, err)
	}
	if res.OK {
		t.Errorf("exercise %d's starter passed the check: %s", x.Number, res)
	}
	return ran
}

// sanitizeCounters runs util.cu's counters of non-finite values on a misaligned view of a float32
// and of a half softmax output: poisoned, every element counts; checked, none does.
func sanitizeCounters(t *testing.T, env *lab.Env) {
	t.Helper()
	for i, c := range []struct {
		d    DType
		step SoftmaxStep
	}{{F32, SoftmaxSteps[3]}, {F16, SoftmaxSteps[6]}} {
		p, err := NewSoftmaxProblem(env, c.d, 3, 37, uint64(180+i), 1)
		if err != nil {
			t.Fatal(err)
		}
		n := p.Rows * p.Cols
		if err := p.Y.poison(); err != nil {
			p.Free()
			t.Fatal(err)
		}
		if bad, err := nonFinite(env, p.Y, n); err != nil || bad != uint64(n) {
			t.Errorf("%s: %d non-finite of %d poisoned (%v)", c.d, bad, n, err)
		}
		if res, _, err := p.Check(c.step, ""); err != nil || !res.OK {
			t.Errorf("%s %s: %v %v", c.d, c.step.Name, err, res.Err())
		}
		if bad, err := nonFinite(env, p.Y, n); err != nil || bad != 0 {
			t.Errorf("%s: %d non-finite of %d checked (%v)", c.d, bad, n, err)
		}
		p.Free()
	}
}

// sanitizeVariants are the variants TestSanitize must run, named as softmaxVariant and lnVariant
// name them: each kernel on each of its paths (float4 or single elements, each cluster size, step
// 5's two kernels) and each exercise's solution.
func sanitizeVariants() []string {
	sm := func(kernel string, vec int32, defines ...string) string {
		return softmaxVariant(SoftmaxLaunch{Kernel: kernel, Vec: vec, Defines: defines})
	}
	want := []string{sm("softmax_naive", -1), sm("softmax_block_tree", -1), sm("softmax_warp_float4", -1),
		sm("softmax_online", 0), sm("softmax_online", 1), sm("softmax_warp_row4", -1), sm("softmax_warp_row1", -1),
		sm("softmax_f16", 0), sm("softmax_f16", 1), sm("softmax_bf16", 0), sm("softmax_bf16", 1)}
	for c := 1; c <= MaxCluster; c *= 2 {
		want = append(want, sm("softmax_cluster", -1, fmt.Sprintf("CLUSTER=%d", c), fmt.Sprintf("VECS=%d", ClusterVecs)))
	}
	regs := []string{"CLUSTER=1", "VECS=8", "SVECS=0", "MAXT=1024", "MINB=1"} // a row in one block's registers
	for _, def := range [][]string{regs, {"CLUSTER=4", "VECS=4", "SVECS=13", "MAXT=512", "MINB=2"}, {"CLUSTER=16", "VECS=4", "SVECS=21", "MAXT=512", "MINB=2"}} {
		want = append(want, sm("softmax_cluster_any", 1, def...))
	}
	ring := []string{"THREADS=512", "SLOTS=4", "LAG=2", "ELEMS=1"}  // rows of at most 2048 floats
	ring2 := []string{"THREADS=512", "SLOTS=4", "LAG=2", "ELEMS=2"} // 4099 at unequal offsets
	want = append(want, sm("softmax_cluster_any", 0, regs...), sm("softmax_cluster_stream", 1, "CLUSTER=8"),
		sm("softmax_cluster_stream", 0, "CLUSTER=8"), sm("softmax_split_stats", 1), sm("softmax_split_stats", 0),
		sm("softmax_grid_ring", 1, ring...), sm("softmax_grid_ring", 0, ring2...))
	for _, x := range Exercises {
		if x.Notebook != LayerNormNotebook { // the softmax exercises' own solution files
			want = append(want, sm(x.Kernel, -1))
		}
	}
	ln := func(s LNStep, kernel string, vec int32) string { return lnVariant(s, LNPlan{OnChip: kernel, Vec: vec}) }
	return append(want, ln(LNSteps[0], "", 0), ln(LNSteps[1], "", 0), ln(LNSteps[1], "", 1), ln(LNSteps[2], "", 0),
		ln(LNSteps[2], "", 1), ln(LNSteps[3], "", 1), ln(LNSteps[4], "ln_warp_rows", 0), ln(LNSteps[4], "ln_warp_rows", 1),
		ln(LNSteps[4], "ln_block_row", 0), ln(LNSteps[4], "ln_block_row", 1), ln(LNSteps[5], "ln_grid_resident", 1))
}

//go:build !nocuda

package reduce

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/torch"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// anyLengthShapes reach every path of steps 8, 9 and 11: lengths off every multiple of 4 (each row
// then starts at another offset from 16 bytes, so the head changes from row to row), shorter than
// one float4, views off 16 bytes (offset 1 and 3), step 8's cluster sizes, rows past registers into
// shared memory (1,000,003 floats: a 16-block cluster with a stash) and past the largest cluster
// (1,500,001: step 8 refuses, steps 9 and 11 take it), and step 11's rings of 2 and 4 slices and
// teams of one block.
var anyLengthShapes = [][3]int{{3, 1, 0}, {4, 3, 1}, {5, 7, 3}, {3, 1025, 0}, {4, 4099, 1}, {3, 32771, 0}, {2, 65539, 3},
	{2, 131075, 0}, {2, 200001, 0}, {2, 262147, 1}, {2, 393219, 1}, {1, 524291, 0}, {2, 1000003, 1}, {1, 1500001, 0}}

// Steps 8, 8b, 9 and 11 on every shape, checked element by element on NaN-poisoned outputs.
func TestAnyLengthSteps(t *testing.T) {
	env := labtest.Open(t)
	seen := map[string]bool{}
	for i, sh := range anyLengthShapes {
		for _, v := range softmaxStepsOn(t, env, sh, uint64(300+i), SoftmaxSteps[7:11]) {
			seen[v] = true
		}
	}
	for _, def := range []string{"SLOTS=2", "SLOTS=4", "ELEMS=1"} { // step 11's rings, and single-block teams
		if !seenDefine(seen, def) {
			t.Errorf("step 11 never ran with %s: %v", def, seen)
		}
	}
	if env.Session.Device.CC() >= 90 {
		for _, c := range []int{1, 2, 4, 6, 8, 12, 16} {
			if !seenDefine(seen, fmt.Sprintf("CLUSTER=%d", c)) {
				t.Errorf("step 8 never ran a cluster of %d: %v", c, seen)
			}
		}
		if !seenDefine(seen, "SVECS=0") || !seenDefine(seen, "SVECS=13") {
			t.Errorf("step 8 never held a row in registers alone, or never part of it in shared memory: %v", seen)
		}
	}
}

func seenDefine(seen map[string]bool, def string) bool {
	for v := range seen {
		if slices.Contains(strings.Fields(v), def) {
			return true
		}
	}
	return false
}

// x and y at different offsets from 16 bytes (x one float in, y two): steps 8, 8b, 9 and 11 move
// single floats (vec = 0) and are still right; the float4 steps refuse.
func TestAnyLengthUnequalOffsets(t *testing.T) {
	env := labtest.Open(t)
	for i, c := range [][2]int{{3, 4099}, {2, 70001}, {1, 600001}} {
		rows, cols := c[0], c[1]
		for _, s := range SoftmaxSteps[7:11] {
			res, plan, err := unequalOffsets(env, s, rows, cols, uint64(400+i))
			switch {
			case refused(err):
				t.Logf("%s (%d, %d): refused: %v", s.Name, rows, cols, err)
			case err != nil:
				t.Fatalf("%s (%d, %d): %v", s.Name, rows, cols, err)
			case plan.Vec != 0:
				t.Errorf("%s (%d, %d): vec = %d with x and y at different offsets", s.Name, rows, cols, plan.Vec)
			case !res.OK:
				t.Errorf("%s (%d, %d): %v", s.Name, rows, cols, res.Err())
			}
		}
	}
}

// unequalOffsets runs step s on rows x cols with x one float and y two floats into their buffers,
// y poisoned, and compares every row with the float64 softmax.
func unequalOffsets(env *lab.Env, s SoftmaxStep, rows, cols int, seed uint64) (check.Result, SoftmaxLaunch, error) {
	n := rows * cols
	xs := Uniform(F32, n, -4, 4, seed)
	xb, err := gpu.Alloc[float32](env.Session, n+1)
	if err != nil {
		return check.Result{}, SoftmaxLaunch{}, err
	}
	defer xb.Free()
	yb, err := gpu.Alloc[float32](env.Session, n+2)
	if err != nil {
		return check.Result{}, SoftmaxLaunch{}, err
	}
	defer yb.Free()
	xv, _ := xb.View(1, n)
	yv, _ := yb.View(2, n)
	if err := xv.CopyFromHost(xs); err != nil {
		return check.Result{}, SoftmaxLaunch{}, err
	}
	p := onBuffers(env, xv, yv, rows, cols)
	p.x, p.seed = xs, seed
	defer p.Free()
	res, plan, err := p.Check(s, "")
	return res, plan, err
}

// The softmax op on every path of its dispatch (step 6, 8, 11 or 9 by length and GPU; step 4 on
// GPUs without clusters), on views off 16 bytes, and on an input with no element: y and dx against the
// float64 references on NaN-poisoned outputs, then finite-difference gradient checks.
func TestSoftmaxOp(t *testing.T) {
	env := labtest.Open(t)
	seen := map[string]bool{}
	for i, c := range softmaxOpShapes {
		r, err := SoftmaxOpCheck(env, c.Shape, c.Offset, uint64(500+i))
		if err != nil {
			t.Fatalf("%v: %v", c.Shape, err)
		}
		t.Log(r)
		if !r.OK() {
			t.Errorf("%v", r)
		}
		if len(r.Launches) > 0 {
			seen[r.Launches[0]] = true
		}
	}
	if env.Session.Device.CC() >= 90 {
		for _, s := range []SoftmaxStep{SoftmaxSteps[5], SoftmaxSteps[7], SoftmaxSteps[10], SoftmaxSteps[9]} {
			if !seen[s.Name] {
				t.Errorf("the op never ran %s: %v", s.Name, seen)
			}
		}
	}
	for i, sh := range [][]int{{3, 7}, {2, 37}, {2, 1030}, {1, 2, 4099}} {
		max := 0
		if sh[len(sh)-1] > 100 {
			max = 24
		}
		res, launches, err := SoftmaxGradCheckGPU(env, sh, uint64(600+i), max)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("gradcheck %v (%v): %s", sh, launches, res)
		if !res.OK {
			t.Errorf("gradcheck %v: %v", sh, res.Err())
		}
	}
}

// KERNELS_TUNE=1: steps 8, 8b and 11 under several policies at long rows, in GB/s and share of
// the copy bandwidth, to choose DefaultClusterPolicy and DefaultRingPolicy.
func TestTuneClusterAny(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("KERNELS_TUNE not set")
	}
	env := labtest.Open(t)
	total := SoftmaxTotal
	p, err := NewSoftmaxProblem(env, F32, 1, total, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	t.Logf("copy bandwidth %.0f GB/s", env.Receipt.CopyGBps)
	colsList := []int{4096, 16384, 32772, 50257, 65536, 262144, 393216, 524288, 1000003, 1048576}
	if c := os.Getenv("KERNELS_TUNE_COLS"); c != "" {
		colsList = nil
		for _, f := range strings.Split(c, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("KERNELS_TUNE_COLS: %v", err)
			}
			colsList = append(colsList, n)
		}
	}
	for _, cols := range colsList {
		q, err := p.Reshape(total/cols, cols)
		if err != nil {
			t.Fatal(err)
		}
		bytes := SoftmaxWork(F32, q.Rows, q.Cols).Bytes
		// tune checks one planned launch of step s, times it and logs it under label.
		tune := func(s SoftmaxStep, label string, plan SoftmaxLaunch, err error) {
			if err != nil {
				t.Logf("cols %d %s: %v", cols, label, err)
				return
			}
			run, plan, prog, err := q.LaunchPlan(s, "", plan)
			if err != nil {
				t.Logf("cols %d %s: %v", cols, label, err)
				return
			}
			if res, err := q.CheckRun(run); err != nil || !res.OK || q.RingFailed() != nil {
				t.Errorf("cols %d %s: %v %v %v", cols, label, err, res.Err(), q.RingFailed())
				return
			}
			k, _ := prog.Kernel(plan.Kernel)
			active := 0
			if plan.Cluster > 0 {
				active, _ = k.MaxActiveClusters(plan.Grid, plan.Block, plan.Shared)
			}
			tm, err := env.Bench.Time(run)
			if err != nil {
				t.Fatal(err)
			}
			gbs := bytes / (tm.Median * 1e-3) / 1e9
			t.Logf("TUNE cols %7d %s: %s; %d regs, %d B local, %d active clusters: %.3f ms %.0f GB/s %.1f%%", cols, label, plan.Note,
				k.Attrs.Registers, k.Attrs.LocalBytes, active, tm.Median, gbs, 100*gbs/env.Receipt.CopyGBps)
		}
		for _, pol := range []ClusterPolicy{DefaultClusterPolicy, {8, 1024, 8, 8, DefaultClusterPolicy.Sizes, 16, 1}} {
			plan, err := PlanClusterAny(q.Input(), pol)
			tune(SoftmaxSteps[7], fmt.Sprintf("%+v", pol), plan, err)
		}
		rings := []RingPolicy{{1024, 48 << 10, 3, 4}}
		for _, kb := range []int{24, 32, 48, 64, 96} {
			for _, teams := range []int{1, 2, 3, 4} {
				rings = append(rings, RingPolicy{512, kb << 10, teams, 4})
			}
		}
		for _, pol := range rings {
			plan, err := PlanGridRing(q.Input(), pol)
			tune(SoftmaxSteps[10], fmt.Sprintf("ring %+v", pol), plan, err)
		}
		for _, pol := range []StreamPolicy{{1024, 8}, {1024, 4}, {512, 8}} {
			tune(SoftmaxSteps[8], fmt.Sprintf("stream %+v", pol), PlanClusterStream(q.Input(), pol), nil)
		}
		for _, s := range []SoftmaxStep{SoftmaxSteps[3], SoftmaxSteps[4], SoftmaxSteps[9]} {
			run, plan, _, err := q.Launcher(s, "")
			if refused(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if res, err := q.CheckRun(run); err != nil || !res.OK {
				t.Errorf("%s cols %d: %v %v", s.Name, cols, err, res.Err())
				continue
			}
			tm, err := env.Bench.Time(run)
			if err != nil {
				t.Fatal(err)
			}
			gbs := bytes / (tm.Median * 1e-3) / 1e9
			t.Logf("TUNE cols %7d %s (%s): %.3f ms %.0f GB/s %.1f%%", cols, s.Name, plan.Note, tm.Median, gbs, 100*gbs/env.Receipt.CopyGBps)
		}
		q.Free()
	}
}

// The PyTorch baseline keeps going past a shape the GPU has no memory for: that case is recorded
// unavailable with the reason, the others are timed.
func TestTorchBaselineOutOfMemory(t *testing.T) {
	env := labtest.Open(t)
	if _, err := torch.Available(); err != nil {
		t.Skip(err)
	}
	run := env.NewRun(ID)
	huge := SoftmaxCase{Case: "huge", Rows: 1 << 20, Cols: 1 << 20, DType: F32} // 4 TiB
	small := SoftmaxCase{Case: "small", Rows: 64, Cols: 1000, DType: F32, Compile: true}
	if err := TorchBaselines(env, run, []SoftmaxCase{huge, small}, nil); err != nil {
		t.Fatal(err)
	}
	h := run.Select("huge")
	if len(h) != 1 || h[0].MedianMS > 0 || !strings.Contains(h[0].Note, "out of device memory") {
		t.Errorf("the 4 TiB case: %+v", h)
	}
	for _, r := range run.Select("small") {
		if r.MedianMS <= 0 {
			t.Errorf("the small case %s: %+v", r.Variant, r)
		}
	}
	if len(run.Select("small")) != 2 {
		t.Errorf("the small case: %+v", run.Select("small"))
	}
}

// Step 11 when its blocks are not all resident (one block more than the SMs, each needing a whole
// SM's shared memory): the resident ones wait about a second for the missing pair, give up and set
// the flag, and the host reports it as an error naming the cause; nothing hangs.
func TestGridRingGivesUp(t *testing.T) {
	env := labtest.Open(t)
	sms := env.Session.Device.SMs
	p, err := NewSoftmaxProblem(env, F32, 2, 4*(sms+1)*1024, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	plan, err := PlanGridRing(p.Input(), DefaultRingPolicy)
	if err != nil {
		t.Fatal(err)
	}
	// One team of every SM plus one: the extra block waits for an SM to free, while the others wait
	// for its pair.
	plan.Team, plan.Grid, plan.Chunk4 = sms+1, sms+1, 1024
	plan.Shared = stashLimit(env.Session.Device) - ringStatic(plan.Block, 4)
	plan.Defines = []string{fmt.Sprintf("THREADS=%d", plan.Block), "SLOTS=4", "LAG=2", fmt.Sprintf("ELEMS=%d", gpu.CeilDiv(1024, plan.Block))}
	plan.Ring = 6
	src, err := kr.Source(SoftmaxSteps[10].File)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := env.BuildWith(src, compile.Options{Defines: plan.Defines}, plan.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(plan.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	// ringLauncher refuses a grid over the SMs; the launch below goes around it on purpose.
	if _, err := p.ringLauncher(k, gpu.Config{}, plan); !refused(err) {
		t.Fatalf("a team of %d blocks on %d SMs: %v, want a refusal", plan.Grid, sms, err)
	}
	p.ring, err = gpu.Alloc[uint32](env.Session, 4+4*plan.Ring*plan.Grid) // laid out as ringLauncher has it
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := p.ring.View(0, 1)
	mail, _ := p.ring.View(4, 4*plan.Ring*plan.Grid)
	if err := p.ring.Zero(); err != nil {
		t.Fatal(err)
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(plan.Block), SharedBytes: plan.Shared}
	if err := k.Launch(cfg, p.X, p.Y, int32(p.Rows), int32(p.Cols), int32(1), int32(plan.Team), int32(plan.Chunk4), mail, failed); err != nil {
		t.Fatal(err)
	}
	if err := env.Session.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := p.RingFailed(); err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("a team that cannot all be resident: %v, want the gave-up error", err)
	} else {
		t.Log(err)
	}
}

// compareHostile compares a softmax output with the float64 reference of x row by row under PyTorch's
// semantics: a row whose reference is NaN (all -inf, a +inf, a NaN) must be NaN everywhere; every
// other row is compared with tol(want) (masked entries exactly 0 within it).
func compareHostile(got []float64, x []float32, rows, cols int, tol func([]float64) check.Tolerance) error {
	for r := range rows {
		want := SoftmaxRow(x[r*cols : (r+1)*cols])
		g := got[r*cols : (r+1)*cols]
		if slices.ContainsFunc(want, func(v float64) bool { return v != v }) {
			if i := slices.IndexFunc(g, func(v float64) bool { return v == v }); i >= 0 {
				return fmt.Errorf("row %d (%s): y[%d] = %g where PyTorch gives NaN (the whole row)", r, hostilePatterns[r%len(hostilePatterns)], i, g[i])
			}
			continue
		}
		if res := check.Compare(g, want, tol(want)); !res.OK {
			return fmt.Errorf("row %d (%s): %v", r, hostilePatterns[r%len(hostilePatterns)], res.Err())
		}
	}
	return nil
}

// Every softmax step the op dispatches to (4, 6, 7 in half and bfloat16, 8, 8b, 9, 11), at lengths
// that give each its block, cluster and team layouts, on the hostile rows (hostileRows: attention
// masks that leave whole blocks all -inf, rows all -inf, +inf and NaN entries, 1e30, constants,
// subnormals) against the float64 reference with PyTorch's semantics, on NaN-poisoned outputs.
func TestSoftmaxStepsHostile(t *testing.T) {
	env := labtest.Open(t)
	rows := len(hostilePatterns)
	for _, c := range []struct {
		step  int
		dtype DType
		cols  []int
	}{
		{3, F32, []int{1001, 4099, 65537}}, {5, F32, []int{768, 1001, 1024}}, {6, F16, []int{1001, 4096, 65537}}, {6, BF16, []int{4099, 65536}},
		{7, F32, []int{4099, 65537, 131075, 262144}}, {8, F32, []int{65537, 300001}}, {9, F32, []int{4099, 65537, 300001}},
		{10, F32, []int{262145, 300001, 1000003}},
	} {
		s := SoftmaxSteps[c.step]
		for i, cols := range c.cols {
			err := hostileStep(env, s, c.dtype, rows, cols, uint64(700+10*c.step+i))
			switch {
			case refused(err):
				t.Logf("%s %s (%d, %d): refused: %v", s.Name, c.dtype, rows, cols, err)
			case err != nil:
				t.Errorf("%s %s (%d, %d): %v", s.Name, c.dtype, rows, cols, err)
			}
		}
	}
}

// hostileStep runs step s once on hostileRows and compares every row.
func hostileStep(env *lab.Env, s SoftmaxStep, d DType, rows, cols int, seed uint64) error {
	p, err := NewSoftmaxProblem(env, d, rows, cols, seed, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	p.x = hostileRows(d, rows, cols, seed)
	if err := p.X.upload(p.x); err != nil {
		return err
	}
	run, _, _, err := p.Launcher(s, "")
	if err != nil {
		return err
	}
	if err := p.Y.poison(); err != nil {
		return err
	}
	if err := run(); err != nil {
		return err
	}
	if err := p.RingFailed(); err != nil {
		return err
	}
	if err := env.Session.Synchronize(); err != nil {
		return err
	}
	got, err := p.Y.read(0, rows*cols)
	if err != nil {
		return err
	}
	return compareHostile(got, p.x, rows, cols, func(w []float64) check.Tolerance { return SoftmaxTolerance(d, w) })
}

// The softmax op forward and backward on the hostile rows at a length of each path of its dispatch
// (step 6, step 8 with clusters of 1 to 16 blocks, step 11, step 9 past it): y and dx against the
// float64 references with PyTorch's semantics (NaN rows NaN in y and dx, masked entries 0 in
// both), then the finite-difference gradient check on masked rows (finite and -inf entries only).
func TestSoftmaxOpHostile(t *testing.T) {
	env := labtest.Open(t)
	rows := len(hostilePatterns)
	seen := map[string]bool{}
	for i, cols := range []int{768, 1001, 4099, 65537, 262145, 300001, 4000003} {
		shape := []int{rows, cols}
		xs, dys := hostileRows(F32, rows, cols, uint64(800+i)), Uniform(F32, rows*cols, -1, 1, uint64(900+i))
		r, err := SoftmaxOpCheckOn(env, xs, dys, shape, i%2)
		if err != nil {
			t.Fatalf("%v: %v", shape, err)
		}
		t.Log(r)
		if len(r.Launches) > 0 {
			seen[r.Launches[0]] = true
		}
		if !r.OK() { // check.Compare: a finite y or dx where the reference is NaN fails too
			t.Errorf("%v", r)
		}
	}
	if env.Session.Device.CC() >= 90 {
		for _, s := range []SoftmaxStep{SoftmaxSteps[5], SoftmaxSteps[7], SoftmaxSteps[10], SoftmaxSteps[9]} {
			if !seen[s.Name] {
				t.Errorf("the op never ran %s: %v", s.Name, seen)
			}
		}
	}
	// Masked rows only (finite and -inf entries): the loss is finite, and a -inf moved by a finite
	// step stays -inf, so both derivatives there are 0.
	for i, c := range []struct{ cols, max int }{{37, 0}, {1030, 48}, {70001, 48}} {
		all := hostileRows(F32, 5, c.cols, uint64(950+i))
		// "masked but three" and "first half masked"
		x := check.Float64s(slices.Concat(all[2*c.cols:3*c.cols], all[4*c.cols:5*c.cols]))
		sh := []int{2, c.cols}
		res, launches, err := SoftmaxGradCheckGPUOn(env, x, sh, uint64(960+i), c.max)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("gradcheck on masked rows %v (%v): %s", sh, launches, res)
		if !res.OK {
			t.Errorf("gradcheck on masked rows %v: %v", sh, res.Err())
		}
	}
}

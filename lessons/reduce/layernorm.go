package reduce

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// LNStep is one rung of the layer norm ladder: the file a reader edits (File) and, for steps
// that reuse another step's kernels, that file too (Stats).
type LNStep struct {
	Name  string
	File  string
	Stats string // the file of the statistics kernels when they are not in File
	Idea  string
}

// LNSteps are the layer norm forward steps, in order.
var LNSteps = []LNStep{
	{Name: "1 block per sample", File: "l1_block_per_sample.cu", Idea: "one block per sample, three passes"},
	{Name: "2 partial sums (article)", File: "l2_partial_sums.cu", Idea: "P blocks per sample, sum and sum of squares: unstable"},
	{Name: "3 Welford + Chan", File: "l3_welford.cu", Idea: "Welford per thread, Chan's merge: stable"},
	{Name: "4 fused normalise + affine", File: "l4_fused.cu", Stats: "l3_welford.cu", Idea: "w and b loaded once for all samples, last samples first"},
	{Name: "5 row on chip", File: "l5_row_on_chip.cu", Idea: "a warp (M <= 1024) or a block (M in shared memory) per sample: x read once, one launch"},
	{Name: "6 grid-resident, read once", File: "l6_grid_resident.cu", Idea: "one block per SM, the sample held in all SMs' shared memory, a grid barrier: x read once"},
}

// LNStepByName finds a step.
func LNStepByName(name string) (LNStep, error) {
	for _, s := range LNSteps {
		if s.Name == name {
			return s, nil
		}
	}
	return LNStep{}, fmt.Errorf("lesson 04: no layer norm step %q", name)
}

// LNPlan is how the layer norm kernels run on N samples of M: P blocks per sample for the
// statistics, the float4 flag, the fused pass's grid and samples per block (G), and for step 5
// its kernel and dynamic shared memory.
type LNPlan struct {
	N, M       int
	P          int
	Vec        int32
	FusedGridX int
	G          int
	OnChip     string // the kernel of steps 5 and 6: ln_warp_rows, ln_block_row or ln_grid_resident
	Shared     int    // dynamic shared memory in bytes (ln_block_row, ln_grid_resident)
	Grid       int    // step 6: Teams x Team blocks, at most one per SM
	Team       int    // step 6: the blocks that hold one sample together
	Chunk4     int    // step 6: the float4s of a sample each block holds
	Note       string
}

// WarpRowMax is the longest sample ln_warp_rows holds in one warp's registers (32 lanes x 32).
const WarpRowMax = 1024

// OnChipMax is the longest sample step 5 takes on device d: what one block's dynamic shared memory
// holds (the opt-in limit less 1 KiB for the kernel's own shared memory).
func OnChipMax(d gpu.DeviceInfo) int {
	limit := d.MaxSharedPerBlockOptin
	if limit == 0 {
		limit = d.MaxSharedPerBlock
	}
	return max(WarpRowMax, (limit-1024)/4)
}

func sharedOptin(d gpu.DeviceInfo) int {
	if d.MaxSharedPerBlockOptin > 0 {
		return d.MaxSharedPerBlockOptin
	}
	return d.MaxSharedPerBlock
}

// GridResidentMax is the longest sample step 6 takes on device d: one slice per SM, each in one
// block's shared memory.
func GridResidentMax(d gpu.DeviceInfo) int {
	return max(d.SMs, 1) * (OnChipMax(d) / 4 * 4)
}

// MaxLNCount is the largest normalised size of the Welford steps: counts are floats, exact below 2^24.
const MaxLNCount = 1 << 24

// FusedSamples is how many samples one block of the fused pass walks with one load of w and b.
const FusedSamples = 16

// PlanLayerNorm checks N x M for step s and picks its launch, before any launch. A shape it
// refuses is a *Refusal.
func PlanLayerNorm(dev gpu.DeviceInfo, s LNStep, N, M int, aligned bool) (LNPlan, error) {
	p, err := planLayerNorm(dev, s, N, M, aligned)
	if err != nil {
		return p, &Refusal{err}
	}
	return p, nil
}

// lnBlocks is the number of blocks per sample of the statistics passes: about 16 blocks per SM
// over all samples, and at least 2048 elements per block.
func lnBlocks(sms, N, M int) int {
	return max(1, min(gpu.CeilDiv(16*max(sms, 1), max(N, 1)), gpu.CeilDiv(M, 2048)))
}

func planLayerNorm(dev gpu.DeviceInfo, s LNStep, N, M int, aligned bool) (LNPlan, error) {
	switch {
	case N < 1:
		return LNPlan{}, fmt.Errorf("layer norm: N = %d samples: there must be at least one", N)
	case M < 1:
		return LNPlan{}, fmt.Errorf("layer norm: the normalised size is %d: the mean of nothing is undefined", M)
	case M > math.MaxInt32/4:
		return LNPlan{}, fmt.Errorf("layer norm: %d samples of %d is over the kernels' limit (M < 2^29)", N, M)
	case N > 65535 && s.Name != LNSteps[4].Name && s.Name != LNSteps[5].Name:
		return LNPlan{}, fmt.Errorf("layer norm step %s: %d samples is over its limit of 65535 (the grid's y dimension); step 5 takes any N for M up to its on-chip limit", s.Name, N)
	}
	p := LNPlan{N: N, M: M, P: lnBlocks(dev.SMs, N, M), G: FusedSamples}
	if M%4 == 0 && aligned {
		p.Vec = 1
	} else {
		p.Note = "not float4-able (M % 4 != 0 or misaligned): single floats"
	}
	if s.Name == LNSteps[2].Name || s.Name == LNSteps[3].Name {
		if M >= MaxLNCount {
			return LNPlan{}, fmt.Errorf("layer norm step %s counts elements in float: M = %d is over its limit of %d (2^24)", s.Name, M, MaxLNCount-1)
		}
	}
	if s.Name == LNSteps[3].Name || s.Name == LNSteps[5].Name {
		if p.Vec == 0 {
			return LNPlan{}, fmt.Errorf("layer norm step %s walks float4s: it needs M %% 4 == 0 (M = %d) and 16-byte aligned x, y, w, b (aligned: %v); step 3 takes any shape", s.Name, M, aligned)
		}
		p.FusedGridX = gpu.CeilDiv(M/4, 256)
	}
	if s.Name == LNSteps[4].Name {
		switch limit := OnChipMax(dev); {
		case M <= WarpRowMax:
			p.OnChip = "ln_warp_rows"
		case M <= limit:
			p.OnChip, p.Shared = "ln_block_row", 4*M
		default:
			return LNPlan{}, gpu.Unsupported("layer norm step 5 holds a sample in one block's shared memory: M = %d is over its limit of %d floats on this GPU (%d KiB per block); steps 3 and 4 take longer samples", M, limit, sharedOptin(dev)>>10)
		}
	}
	if s.Name == LNSteps[5].Name {
		if err := gpu.NeedCC("layer norm step 6", dev, 80, "createpolicy, the L2 cache hints"); err != nil {
			return LNPlan{}, err
		}
		if M <= OnChipMax(dev) {
			return LNPlan{}, fmt.Errorf("layer norm step 6 is for samples too long for one block: M = %d fits step 5 (up to %d), where a grid barrier per sample would cost more than the sample itself", M, OnChipMax(dev))
		}
		if limit := GridResidentMax(dev); M > limit {
			return LNPlan{}, gpu.Unsupported("layer norm step 6 holds a sample in the shared memory of all %d SMs: M = %d is over its limit of %d floats on this GPU (%d SMs x %d KiB); step 4 takes longer samples", dev.SMs, M, limit, dev.SMs, sharedOptin(dev)>>10)
		}
		if dev.MaxThreadsPerBlock != 0 && dev.MaxThreadsPerBlock < 1024 {
			return LNPlan{}, gpu.Unsupported("layer norm step 6 runs blocks of 1024 threads; this GPU allows %d", dev.MaxThreadsPerBlock)
		}
		sms := max(dev.SMs, 1)
		least := gpu.CeilDiv(M/4, OnChipMax(dev)/4) // the fewest blocks whose shared memory holds a sample
		teams := max(1, min(sms/least, N))
		p.OnChip, p.Team = "ln_grid_resident", sms/teams
		p.Grid = teams * p.Team
		p.Chunk4 = gpu.CeilDiv(M/4, p.Team)
		p.Shared = 16 * p.Chunk4
	}
	return p, nil
}

// partialsLen is the floats of the partial statistics of every step: three per block of the
// statistics passes (steps 2-4, the backward) or per SM (step 6).
func partialsLen(d gpu.DeviceInfo, N, M int) int {
	return 3 * N * max(lnBlocks(d.SMs, N, M), d.SMs)
}

// LNWork is the minimum traffic of a layer norm forward: x read once, y written once, w and b read once.
func LNWork(N, M int) bench.Work {
	return bench.Work{Bytes: 4 * (2*float64(N)*float64(M) + 2*float64(M))}
}

// LNBackwardWork is the minimum traffic of the backward: x, dy, w read once; dx, dw, db written once.
func LNBackwardWork(N, M int) bench.Work {
	return bench.Work{Bytes: 4 * (3*float64(N)*float64(M) + 3*float64(M))}
}

// LNForwardBackwardWork is the forward's minimum traffic plus the backward's.
func LNForwardBackwardWork(N, M int) bench.Work {
	return bench.Work{Bytes: LNWork(N, M).Bytes + LNBackwardWork(N, M).Bytes}
}

// LNProblem is a layer norm on the GPU: N samples of M (fresh random x, weight and bias), outputs,
// saved statistics, and for the backward dy and the gradients.
type LNProblem struct {
	N, M                   int
	X, W, B, Y, Mean, Rstd *gpu.Buffer[float32]
	Partials, C            *gpu.Buffer[float32]
	// Sync is step 6's barrier: N arrival counters, then the flag a block sets when it gave up.
	Sync           *gpu.Buffer[uint32]
	DY, DX, DW, DB *gpu.Buffer[float32]
	x, w, b, dy    []float32
	env            *lab.Env
	owned          []*gpu.Buffer[float32]
	Shifted        bool
}

// NewLNProblem uploads fresh inputs: x uniform in [-1, 1) (shifted: mean 1000 and standard
// deviation 0.1, uniform in 1000 +- 0.1 sqrt 3), w in [0.5, 1.5), b in [-0.5, 0.5). offset > 0
// starts x and y that many floats into their allocations (misaligned views). backward also
// allocates dy (uniform in [-1, 1)) and the gradients.
func NewLNProblem(env *lab.Env, N, M int, seed uint64, shifted, backward bool, offset int) (*LNProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("layer norm: running kernels needs a GPU (%s)", env.Mode)
	}
	if N < 0 || M < 0 || offset < 0 {
		return nil, fmt.Errorf("layer norm: N %d, M %d, offset %d must not be negative", N, M, offset)
	}
	p := &LNProblem{N: N, M: M, env: env, Shifted: shifted}
	if shifted {
		h := float32(0.1 * math.Sqrt(3))
		p.x = Uniform(F32, N*M, 1000-h, 1000+h, seed)
	} else {
		p.x = Uniform(F32, N*M, -1, 1, seed)
	}
	p.w = Uniform(F32, M, 0.5, 1.5, seed+1)
	p.b = Uniform(F32, M, -0.5, 0.5, seed+2)
	alloc := func(n, off int, host []float32) (*gpu.Buffer[float32], error) {
		whole, err := gpu.Alloc[float32](env.Session, n+off)
		if err != nil {
			return nil, fmt.Errorf("layer norm (%d, %d): %w", N, M, err)
		}
		p.owned = append(p.owned, whole)
		v, err := whole.View(off, n)
		if err == nil && host != nil {
			err = v.CopyFromHost(host)
		}
		return v, err
	}
	var err error
	do := func(dst **gpu.Buffer[float32], n, off int, host []float32) {
		if err == nil {
			*dst, err = alloc(n, off, host)
		}
	}
	do(&p.X, N*M, offset, p.x)
	do(&p.Y, N*M, offset, nil)
	do(&p.W, M, 0, p.w)
	do(&p.B, M, 0, p.b)
	if err == nil {
		if err = p.allocScratch(); err != nil {
			return nil, fmt.Errorf("layer norm (%d, %d): %w", N, M, err) // allocScratch freed p
		}
	}
	if backward {
		p.dy = Uniform(F32, N*M, -1, 1, seed+3)
		do(&p.DY, N*M, offset, p.dy)
		do(&p.DX, N*M, offset, nil)
		do(&p.DW, M, 0, nil)
		do(&p.DB, M, 0, nil)
	}
	if err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the buffers.
func (p *LNProblem) Free() {
	for _, b := range p.owned {
		b.Free()
	}
	if p.Sync != nil {
		p.Sync.Free()
		p.Sync = nil
	}
	p.owned = nil
}

// allocScratch allocates what the forward and backward steps need beside x, w, b and the outputs
// (mean, rstd, the backward's means, the partials, and step 6's barrier counters), owned by p until
// Free; on an error it frees what it allocated.
func (p *LNProblem) allocScratch() error {
	lens := scratchLens(p.env.Session.Device, p.N, p.M)
	for i, a := range []struct {
		dst  **gpu.Buffer[float32]
		what string
	}{{&p.Mean, "mean"}, {&p.Rstd, "rstd"}, {&p.C, "backward means"}, {&p.Partials, "partials"}} {
		buf, err := gpu.Alloc[float32](p.env.Session, lens[i])
		if err != nil {
			p.Free()
			return fmt.Errorf("allocating the %s (%d floats): %w", a.what, lens[i], err)
		}
		p.owned = append(p.owned, buf)
		*a.dst = buf
	}
	var err error
	if p.Sync, err = gpu.Alloc[uint32](p.env.Session, p.N+1); err != nil {
		p.Free()
		return fmt.Errorf("allocating the barrier counters: %w", err)
	}
	return nil
}

// scratchLens are the floats of each scratch buffer allocScratch allocates for N samples of M on
// d (at least one each): the means, the rstds, the backward's two means per sample, the partials.
// Step 6's barrier counters, N+1 uint32s, come beside them.
func scratchLens(d gpu.DeviceInfo, N, M int) [4]int {
	return [4]int{max(N, 1), max(N, 1), max(2*N, 1), max(partialsLen(d, N, M), 1)}
}

// Plan is step s's launch on this problem.
func (p *LNProblem) Plan(s LNStep) (LNPlan, error) {
	return PlanLayerNorm(p.env.Session.Device, s, p.N, p.M, gpu.Aligned(16, p.X, p.Y, p.W, p.B))
}

func (p *LNProblem) build(file, code string, defines []string, kernels ...string) (*lab.Program, error) {
	src := compile.Source{Name: "edited_" + file, Code: code}
	if code == "" {
		var err error
		if src, err = kr.Source(file); err != nil {
			return nil, err
		}
	}
	return p.env.BuildWith(src, compile.Options{Defines: defines}, kernels...)
}

type launch struct {
	k    *gpu.Kernel
	cfg  gpu.Config
	args []any
}

func (p *LNProblem) kernels(prog *lab.Program, names ...string) ([]*gpu.Kernel, error) {
	var ks []*gpu.Kernel
	for _, n := range names {
		k, err := prog.Kernel(n)
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func queue(ls []launch) func() error {
	return func() error {
		for _, l := range ls {
			if err := l.k.Launch(l.cfg, l.args...); err != nil {
				return err
			}
		}
		return nil
	}
}

// Launcher compiles step s (code replaces its File when not empty) and returns a function that
// queues its kernels: the statistics, then the normalise pass.
func (p *LNProblem) Launcher(s LNStep, code string) (func() error, LNPlan, error) {
	plan, err := p.Plan(s)
	if err != nil {
		return nil, plan, err
	}
	N, M, P, eps := int32(p.N), int32(p.M), int32(plan.P), float32(LNEps)
	grid := gpu.Config{Grid: gpu.D2(plan.P, p.N), Block: gpu.D1(256)}
	var ls []launch
	switch s.Name {
	case LNSteps[0].Name:
		prog, err := p.build(s.File, code, nil, "layernorm_block")
		if err != nil {
			return nil, plan, err
		}
		ks, err := p.kernels(prog, "layernorm_block")
		if err != nil {
			return nil, plan, err
		}
		ls = []launch{{ks[0], gpu.Config{Grid: gpu.D1(p.N), Block: gpu.D1(1024)}, []any{p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, N, M, eps}}}
	case LNSteps[1].Name:
		prog, err := p.build(s.File, code, nil, "ln_sumsq_partials", "ln_sumsq_normalize")
		if err != nil {
			return nil, plan, err
		}
		ks, err := p.kernels(prog, "ln_sumsq_partials", "ln_sumsq_normalize")
		if err != nil {
			return nil, plan, err
		}
		ls = []launch{{ks[0], grid, []any{p.X, p.Partials, M, P, plan.Vec}},
			{ks[1], grid, []any{p.X, p.W, p.B, p.Y, p.Partials, p.Mean, p.Rstd, M, P, eps, plan.Vec}}}
	case LNSteps[2].Name, LNSteps[3].Name:
		statsCode := code
		if s.Stats != "" {
			statsCode = ""
		}
		stats := s.File
		if s.Stats != "" {
			stats = s.Stats
		}
		prog, err := p.build(stats, statsCode, nil, "ln_welford_partials", "ln_welford_finalize", "ln_normalize")
		if err != nil {
			return nil, plan, err
		}
		ks, err := p.kernels(prog, "ln_welford_partials", "ln_welford_finalize", "ln_normalize")
		if err != nil {
			return nil, plan, err
		}
		ls = []launch{{ks[0], grid, []any{p.X, p.Partials, M, P, plan.Vec}},
			{ks[1], gpu.Config{Grid: gpu.D1(p.N), Block: gpu.D1(256)}, []any{p.Partials, p.X, p.Mean, p.Rstd, M, P, eps}}}
		if s.Name == LNSteps[2].Name {
			ls = append(ls, launch{ks[2], grid, []any{p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, M, P, plan.Vec}})
			break
		}
		fprog, err := p.build(s.File, code, nil, "ln_normalize_fused")
		if err != nil {
			return nil, plan, err
		}
		fk, err := p.kernels(fprog, "ln_normalize_fused")
		if err != nil {
			return nil, plan, err
		}
		ls = append(ls, launch{fk[0], gpu.Config{Grid: gpu.D2(plan.FusedGridX, gpu.CeilDiv(p.N, plan.G)), Block: gpu.D1(256)},
			[]any{p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, N, M, int32(plan.G)}})
	case LNSteps[4].Name:
		prog, err := p.build(s.File, code, nil, plan.OnChip)
		if err != nil {
			return nil, plan, err
		}
		ks, err := p.kernels(prog, plan.OnChip)
		if err != nil {
			return nil, plan, err
		}
		cfg := gpu.Config{Grid: gpu.D1(gpu.CeilDiv(p.N, 8)), Block: gpu.D1(256)}
		args := []any{p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, N, M, eps, plan.Vec}
		if plan.OnChip == "ln_block_row" {
			cfg = gpu.Config{Grid: gpu.D1(p.N), Block: gpu.D1(512), SharedBytes: plan.Shared}
			args = []any{p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, M, eps, plan.Vec}
		}
		ls = []launch{{ks[0], cfg, args}}
	case LNSteps[5].Name:
		return p.gridResident(s, code, plan)
	default:
		return nil, plan, fmt.Errorf("lesson 04: no layer norm step %q", s.Name)
	}
	return queue(ls), plan, nil
}

// gridResident is step 6's launcher: the barrier's counters are zeroed (queued), then one block
// per SM. The driver must confirm that a block fits on an SM, or the barrier could wait forever.
func (p *LNProblem) gridResident(s LNStep, code string, plan LNPlan) (func() error, LNPlan, error) {
	if p.Sync == nil || p.Partials == nil || p.Partials.Len() < 3*p.N*plan.Team {
		return nil, plan, fmt.Errorf("layer norm step 6: the problem has no barrier counters or too few partials")
	}
	prog, err := p.build(s.File, code, nil, plan.OnChip)
	if err != nil {
		return nil, plan, err
	}
	k, err := prog.Kernel(plan.OnChip)
	if err != nil {
		return nil, plan, err
	}
	occ, err := k.Occupancy(1024, plan.Shared)
	if err != nil {
		return nil, plan, err
	}
	if occ.BlocksPerSM < 1 {
		return nil, plan, &Refusal{fmt.Errorf("layer norm step 6 needs one block of 1024 threads with %d bytes of shared memory on every SM at once; the driver fits none (limited by %s)", plan.Shared, occ.Limiter)}
	}
	arrived, err := p.Sync.View(0, p.N)
	if err != nil {
		return nil, plan, err
	}
	failed, err := p.Sync.View(p.N, 1)
	if err != nil {
		return nil, plan, err
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(1024), SharedBytes: plan.Shared}
	return func() error {
		if err := p.Sync.Zero(); err != nil {
			return err
		}
		return k.Launch(cfg, p.X, p.W, p.B, p.Y, p.Mean, p.Rstd, p.Partials, arrived, failed, int32(p.N), int32(p.M), int32(plan.Team), int32(plan.Chunk4), float32(LNEps))
	}, plan, nil
}

// barrierFailed says whether step 6's last run gave up at its grid barrier (its blocks were not all
// resident: another process holding SMs), as an error naming that; nil otherwise.
func (p *LNProblem) barrierFailed() error {
	return gaveUp(p.Sync, p.N, "layer norm step 6: a block waited more than a second at the grid barrier", p.env)
}

// Tolerance is the forward check's tolerance: check.FP32, or ShiftedTolerance for shifted inputs.
func (p *LNProblem) Tolerance() check.Tolerance {
	if p.Shifted {
		return ShiftedTolerance
	}
	return check.FP32
}

// checkedSamples are the samples compared in full with the reference: all of them when the
// problem is small, otherwise the first and the last (plus a non-finite count over everything).
func (p *LNProblem) checkedSamples() []int {
	if p.N*p.M <= MaxFullCheck || p.N <= 2 {
		s := make([]int, p.N)
		for i := range s {
			s[i] = i
		}
		return s
	}
	return []int{0, p.N - 1}
}

// Checked says what the check covered.
func (p *LNProblem) Checked() string {
	if len(p.checkedSamples()) == p.N {
		return "every element"
	}
	return "the first and last samples + a NaN count of all"
}

func readF(b *gpu.Buffer[float32], off, n int) ([]float64, error) {
	v, err := b.View(off, n)
	if err != nil {
		return nil, err
	}
	h, err := v.ToHost()
	if err != nil {
		return nil, err
	}
	return check.Float64s(h), nil
}

func (p *LNProblem) countNonFinite(b *gpu.Buffer[float32], n int) (int, error) {
	c, err := nonFinite(p.env, Tensor{DType: F32, F32: b}, n)
	return int(c), err
}

// CheckRun runs a forward once on a NaN-poisoned output and compares y with the float64 layer
// norm (and the saved mean and rstd with the reference's, at the same tolerance).
func (p *LNProblem) CheckRun(run func() error) (check.Result, error) {
	for _, b := range []*gpu.Buffer[float32]{p.Y, p.Mean, p.Rstd} {
		if err := b.Poison(); err != nil {
			return check.Result{}, err
		}
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	var got, want []float64
	for _, n := range p.checkedSamples() {
		g, err := readF(p.Y, n*p.M, p.M)
		if err != nil {
			return check.Result{}, err
		}
		y, _, _ := LayerNormSample(p.x[n*p.M:(n+1)*p.M], p.w, p.b, LNEps)
		got, want = append(got, g...), append(want, y...)
	}
	res := check.Compare(got, want, p.Tolerance())
	if len(p.checkedSamples()) < p.N {
		bad, err := p.countNonFinite(p.Y, p.N*p.M)
		if err != nil {
			return res, err
		}
		if bad > 0 {
			res.NonFinite += bad
			res.OK = false
		}
	}
	if res.OK {
		// The saved statistics feed the backward: every sample's must be finite.
		m, err := p.Mean.ToHost()
		if err != nil {
			return res, err
		}
		r, err := p.Rstd.ToHost()
		if err != nil {
			return res, err
		}
		for i := range m {
			if math.IsNaN(float64(m[i])) || math.IsNaN(float64(r[i])) || math.IsInf(float64(r[i]), 0) {
				res.NonFinite++
				res.OK = false
			}
		}
	}
	return res, nil
}

// Check runs step s (or code) once and compares it with the reference.
func (p *LNProblem) Check(s LNStep, code string) (check.Result, LNPlan, error) {
	run, plan, err := p.Launcher(s, code)
	if err != nil {
		return check.Result{}, plan, err
	}
	res, err := p.CheckRun(run)
	if err == nil && s.Name == LNSteps[5].Name {
		err = p.barrierFailed()
	}
	return res, plan, err
}

// Measure checks step s, then times it. A step that fails its check returns the record and an
// error, unless expectFail (the stability demonstration records step 2's failure as a finding).
func (p *LNProblem) Measure(caseName string, s LNStep, code, variant string, expectFail bool) (record.Record, error) {
	if variant == "" {
		variant = s.Name
	}
	rec := record.Record{Case: caseName, Variant: variant, Kind: "kernel", DType: "float32", Shape: fmt.Sprintf("(%d, %d)", p.N, p.M), Size: int64(p.M)}
	res, plan, err := p.Check(s, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct, rec.Tol = res.RelL2, res.MaxAbs, res.OK, res.Tol.Name
	rec.Note = fmt.Sprintf("P = %d blocks per sample, vec %d", plan.P, plan.Vec)
	switch s.Name {
	case LNSteps[0].Name:
		rec.Note = fmt.Sprintf("%d blocks of 1024", p.N)
	case LNSteps[4].Name:
		rec.Note = fmt.Sprintf("%s, vec %d", plan.OnChip, plan.Vec)
	case LNSteps[5].Name:
		rec.Note = fmt.Sprintf("%s: %d teams of %d blocks of 1024, %d KiB of x each", plan.OnChip, plan.Grid/plan.Team, plan.Team, plan.Shared>>10)
	}
	if !res.OK {
		rec.Note += "; check: " + res.Err().Error()
		if !expectFail {
			return rec, fmt.Errorf("layer norm %s (%d, %d): %w", s.Name, p.N, p.M, res.Err())
		}
	}
	run, _, err := p.Launcher(s, code)
	if err != nil {
		return rec, err
	}
	rec, err = p.env.Measure(rec, LNWork(p.N, p.M), run)
	if err == nil && s.Name == LNSteps[5].Name {
		err = p.barrierFailed() // a timed run that gave up would have timed nothing real
	}
	return rec, err
}

// BackwardLauncher returns a function that queues the backward (l7_backward.cu; code replaces it
// when not empty) on the statistics a forward saved in Mean and Rstd. It takes the shapes step 3
// takes: float4 when M % 4 == 0 and the buffers are aligned, single floats otherwise.
func (p *LNProblem) BackwardLauncher(code string) (func() error, LNPlan, error) {
	if p.DY == nil {
		return nil, LNPlan{}, fmt.Errorf("layer norm backward: the problem was made without backward buffers")
	}
	plan, err := PlanLNBackward(p.env.Session.Device, p.N, p.M, gpu.Aligned(16, p.X, p.DY, p.DX, p.W))
	if err != nil {
		return nil, plan, err
	}
	prog, err := p.build("l7_backward.cu", code, nil, "ln_bwd_partials", "ln_bwd_finalize", "ln_bwd_dx")
	if err != nil {
		return nil, plan, err
	}
	ks, err := p.kernels(prog, "ln_bwd_partials", "ln_bwd_finalize", "ln_bwd_dx")
	if err != nil {
		return nil, plan, err
	}
	M, P := int32(p.M), int32(plan.P)
	ls := []launch{
		{ks[0], gpu.Config{Grid: gpu.D2(plan.P, p.N), Block: gpu.D1(256)}, []any{p.X, p.DY, p.W, p.Mean, p.Rstd, p.Partials, M, P, plan.Vec}},
		{ks[1], gpu.Config{Grid: gpu.D1(p.N), Block: gpu.D1(256)}, []any{p.Partials, p.C, M, P}},
		{ks[2], gpu.Config{Grid: gpu.D1(plan.FusedGridX), Block: gpu.D1(256)}, []any{p.X, p.DY, p.W, p.Mean, p.Rstd, p.C, p.DX, p.DW, p.DB, int32(p.N), M, plan.Vec}},
	}
	return queue(ls), plan, nil
}

// PlanLNBackward checks N x M for the backward and picks its launch, before any launch: step 3's
// statistics limits, float4 when aligned, and the dx pass's grid over float4 or single columns.
func PlanLNBackward(dev gpu.DeviceInfo, N, M int, aligned bool) (LNPlan, error) {
	plan, err := PlanLayerNorm(dev, LNSteps[2], N, M, aligned)
	if err != nil {
		return plan, &Refusal{fmt.Errorf("layer norm backward (it takes the shapes step 3 takes): %w", err)}
	}
	plan.FusedGridX = gpu.CeilDiv(M, 256)
	if plan.Vec == 1 {
		plan.FusedGridX = gpu.CeilDiv(M/4, 256)
	}
	return plan, nil
}

// ForwardStep is the forward step that the autograd op and the backward's checks run on N x M:
// step 5 where the sample fits in one block; else step 6 where it fits in all SMs together and w
// and b (8M bytes) fit in half of L2, since step 6 reads them for every sample; else step 4 where
// float4 applies; else step 3 (any shape).
func ForwardStep(dev gpu.DeviceInfo, N, M int, aligned bool) LNStep {
	for _, s := range []LNStep{LNSteps[4], LNSteps[5], LNSteps[3]} {
		if s.Name == LNSteps[5].Name && 8*M > dev.L2Bytes/2 {
			continue
		}
		if _, err := PlanLayerNorm(dev, s, N, M, aligned); err == nil {
			return s
		}
	}
	return LNSteps[2]
}

// forwardStep is ForwardStep for this problem's buffers.
func (p *LNProblem) forwardStep() LNStep {
	return ForwardStep(p.env.Session.Device, p.N, p.M, gpu.Aligned(16, p.X, p.Y, p.W, p.B))
}

// CheckBackward runs the forward (ForwardStep) and the backward once on poisoned gradients and
// compares dx (checked samples), dw and db with the float64 backward.
func (p *LNProblem) CheckBackward(code string) (check.Result, error) {
	fwd, _, err := p.Launcher(p.forwardStep(), "")
	if err != nil {
		return check.Result{}, err
	}
	bwd, _, err := p.BackwardLauncher(code)
	if err != nil {
		return check.Result{}, err
	}
	for _, b := range []*gpu.Buffer[float32]{p.DX, p.DW, p.DB} {
		if err := b.Poison(); err != nil {
			return check.Result{}, err
		}
	}
	if err := fwd(); err != nil {
		return check.Result{}, err
	}
	if err := bwd(); err != nil {
		return check.Result{}, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	dx, dw, db := LayerNormBackward(p.x, p.w, p.dy, p.N, p.M, LNEps)
	var got, want []float64
	for _, n := range p.checkedSamples() {
		g, err := readF(p.DX, n*p.M, p.M)
		if err != nil {
			return check.Result{}, err
		}
		got, want = append(got, g...), append(want, dx[n*p.M:(n+1)*p.M]...)
	}
	for i, b := range []*gpu.Buffer[float32]{p.DW, p.DB} {
		g, err := readF(b, 0, p.M)
		if err != nil {
			return check.Result{}, err
		}
		got = append(got, g...)
		want = append(want, [][]float64{dw, db}[i]...)
	}
	res := check.Compare(got, want, LNBackwardTolerance(p.x, p.w, p.dy, p.N, p.M))
	if len(p.checkedSamples()) < p.N {
		bad, err := p.countNonFinite(p.DX, p.N*p.M)
		if err != nil {
			return res, err
		}
		if bad > 0 {
			res.NonFinite += bad
			res.OK = false
		}
	}
	return res, nil
}

package kernelbench

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/parallel"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// --- the matrix-product family beyond problems 1 and 2: the matrix-vector product (gemv.cu), the
// batched product (one product of lesson 03 or 08 per batch entry), the transposed operands
// (transpose.cu into the layout the lessons' steps read) and the level-2 GEMMs (nn.Linear's weight
// transposed once when the inputs are loaded, the product, then linear_epilogue.cu).

// mmPlan is one product of the family: the shape of each product, the batch, how the operands are
// stored.
type mmPlan struct {
	s                               matmul.Shape
	batch                           int
	transA, transB, batched, linear bool
}

func mmPlanOf(p kb.Problem) mmPlan {
	batch, M, K, N := p.Dims()
	tA, tB, batched, linear, _ := kb.MatMulFamily(p.Op)
	return mmPlan{s: matmul.Shape{M: M, N: N, K: K}, batch: batch, transA: tA, transB: tB, batched: batched, linear: linear}
}

// gemv reports whether the product is a matrix-vector product that gemv.cu runs: one column of B,
// A stored as it is read.
func (pl mmPlan) gemv() bool {
	return pl.s.N == 1 && pl.batch == 1 && !pl.transA && !pl.transB && !pl.linear
}

// splitSafe reports whether every value of A and B lies within [-1, 1] (torch.rand's, and
// nn.Linear's weight, bounded by 1/sqrt(in)): far below fp16's largest, so the fp16 split may run.
func splitSafe(p kb.Problem) bool {
	for _, t := range p.Tensors[:2] {
		if t.Dist != kb.Rand && !(t.Dist == kb.KaimingUniform && t.Bound() <= 1) {
			return false
		}
	}
	return true
}

// fewTiles reports whether 128 x 128 tiles of batch products of shape s would leave most SMs of d
// idle (problem 6's 256 x 256 output is 4 tiles): then lesson 03's any-shape step, where it runs
// in the split's stead, cuts K into slices (familyStep), as the split does itself (hopper.Step's
// Slices). A batch's products count together (problem 3: 64 tiles an entry, 128 entries), though
// they run one after the other: what they would gain from slices of K is less than the slices'
// own pass.
func fewTiles(s matmul.Shape, batch int, d gpu.DeviceInfo) bool {
	return d.SMs > 0 && batch*gpu.CeilDiv(s.M, hopper.Split.BM)*gpu.CeilDiv(s.N, hopper.Split.BN) < d.SMs/2
}

// familySplit reports whether a product of the family runs lesson 08's split: as hopperSplit
// (Hopper, inputs in fp16's range, from hopper.SplitMinMACs multiply-adds up; an output of few
// tiles gets slices of K); forced (the tests' small shapes), on any shape the split's plan takes.
func (b backend) familySplit(p kb.Problem, pl mmPlan, d gpu.DeviceInfo) bool {
	if !splitSafe(p) || hopper.NeedHopper("", d) != nil {
		return false
	}
	if b.forceSplit {
		return (hopper.Multiplier{}).UsesSplit(pl.s, d)
	}
	return (hopper.Multiplier{MinMACs: hopper.SplitMinMACs}).UsesSplit(pl.s, d)
}

// familyStep is lesson 03's step where the split does not run: where the output has few tiles,
// the any-shape step with its large tile, 64 x 128, and K cut into as many slices as give every SM
// three blocks (the 12 warps an SM holds of these tiles, whose registers are capped at 168), added
// up through the workspace: problem 6's 256 x 256 output is 8 such tiles, in 49 slices of K on 132
// SMs (392 blocks), where the plan's own choice stops at a wave of 4 warps an SM and a cluster at 8
// slices; else Pick's float32-accurate step.
func familyStep(p kb.Problem, pl mmPlan, d gpu.DeviceInfo) matmul.Step {
	s := pl.s
	if fewTiles(s, pl.batch, d) {
		t := matmul.AnyShapeTiles[0]
		wide := matmul.AnyShapeWith(t, max(1, anyShapeBlocksPerSM*d.SMs/t.Blocks(s)))
		if wide.Validate(s, d) == nil {
			return wide
		}
	}
	return matmul.Pick(s, d, true, splitSafe(p))
}

// anyShapeBlocksPerSM is how many blocks of the any-shape step's 64 x 128 tile an SM holds at once.
const anyShapeBlocksPerSM = 3

// familyMemory is what a problem of the family needs on the device beside its tensors: one
// product's A, B, C (the transposed copies, one batch entry), the split's halves and its slices'
// workspace.
func (b backend) familyMemory(p kb.Problem, d gpu.DeviceInfo) int64 {
	pl := mmPlanOf(p)
	if pl.gemv() {
		return 0
	}
	split := b.familySplit(p, pl, d)
	need := matmul.DeviceBytes(pl.s, split)
	if split {
		need += hopper.Split.WorkspaceBytes(pl.s, d)
	}
	return need
}

// openFamily opens a product of the family other than problems 1 and 2 (openMatMul).
func (b backend) openFamily(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	pl := mmPlanOf(p)
	if pl.gemv() {
		return b.openGEMV(m, pl)
	}
	d := b.env.Session.Device
	s := pl.s
	prob, err := matmul.NewProblem(b.env, s, 1, 0, 0, 0)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	prob.A, prob.B = nil, nil
	// The product's own A, B and C are its transposed copies (or, unused, one batch entry's room);
	// each run points it at the buffers of the entry it computes, and Free puts them back.
	ownA, ownB, ownC := prob.Ad, prob.Bd, prob.Cd
	var launch func() (func() error, error)
	var v kb.Variant
	split := b.familySplit(p, pl, d)
	if split {
		hp := hopper.AccurateFrom(b.env, prob)
		m.frees = append(m.frees, hp.Free)
		if launch, err = b.splitLauncher(m, hp, pl); err != nil {
			return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
		}
		own := hp.Tol(hopper.Split)
		v = kb.Variant{Name: hopper.Lesson08Prefix + hopper.Split.Name, DType: hopper.SplitDType, Tol: matmul.Tolerance("float32", s.K), Own: &own}
		if n := hopper.Split.Slices(s, d); n > 1 {
			v.Name += fmt.Sprintf(", %d slices of K", n)
			v.Note = fmt.Sprintf("C's %d x %d output has too few tiles for the GPU's clusters: K is cut into %d slices, their partial products summed in order by hg_sum_slices", s.M, s.N, n)
		}
		switch {
		case pl.linear:
			v.Name += ", W split once"
			v.Note = "nn.Linear's weight is split into its fp16 halves once, as a model would keep it, read from its stored layout (split_transposed.cu); C then goes through linear_epilogue.cu"
		case pl.transA || pl.transB:
			v.Note = "the operands stored transposed are split into fp16 halves straight from that layout (split_transposed.cu): no transpose pass"
		}
	} else {
		m.frees = append(m.frees, prob.Free)
		st := familyStep(p, pl, d)
		launch = func() (func() error, error) { run, _, _, err := prob.Launcher(st, ""); return run, err }
		v = kb.Variant{Name: st.Name, DType: st.DType, Tol: matmul.Tolerance("float32", s.K)}
		if own := st.Tol(s.K); own.Name != v.Tol.Name {
			v.Own = &own
		}
	}
	m.frees = append(m.frees, func() { prob.Ad, prob.Bd, prob.Cd = ownA, ownB, ownC })
	// entry is batch entry i's A, B and C as the product reads them.
	entry := func(i int) (a, bb, c *gpu.Buffer[float32], err error) {
		a, bb, c = ownA, ownB, m.out
		if !pl.transA {
			if a, err = m.tensors[0].View(i*s.M*s.K, s.M*s.K); err != nil {
				return
			}
		}
		if !pl.transB {
			if bb, err = m.tensors[1].View(i*s.K*s.N, s.K*s.N); err != nil {
				return
			}
		}
		c, err = m.out.View(i*s.M*s.N, s.M*s.N)
		return
	}
	runs := make([]func() error, pl.batch)
	bufs := make([][3]*gpu.Buffer[float32], pl.batch)
	for i := range runs {
		a, bb, c, err := entry(i)
		if err != nil {
			return m.fail(fmt.Errorf("%s: batch entry %d: %w", p.ID(), i, err))
		}
		bufs[i] = [3]*gpu.Buffer[float32]{a, bb, c}
		prob.Ad, prob.Bd, prob.Cd = a, bb, c
		if runs[i], err = launch(); err != nil {
			return m.fail(fmt.Errorf("%s, matmul %s: %w", p.ID(), v.Name, err))
		}
	}
	product := func() error {
		for i, run := range runs {
			prob.Ad, prob.Bd, prob.Cd = bufs[i][0], bufs[i][1], bufs[i][2]
			if err := run(); err != nil {
				return err
			}
		}
		return nil
	}
	var pre []func() error
	if !split { // lesson 03's steps read A and B as they are: a stored transpose is copied first
		tr, err := b.transposer()
		if err != nil {
			return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
		}
		if pl.transA {
			pre = append(pre, func() error { return tr(m.tensors[0], ownA, s.K, s.M) })
			v.Name += " + transpose of A"
		}
		if pl.transB && !pl.linear {
			pre = append(pre, func() error { return tr(m.tensors[1], ownB, s.N, s.K) })
			v.Name += " + transpose of B"
		}
		if pl.linear { // the weight is a parameter: transposed once, when the inputs are loaded
			m.loaded = append(m.loaded, func() error { return tr(m.tensors[1], ownB, s.N, s.K) })
			v.Note = "nn.Linear's weight (out x in) is stored transposed (in x out) once, as a model would keep it; the product's C then goes through linear_epilogue.cu"
		}
	}
	var tail func() error
	if pl.linear {
		if tail, err = b.linearEpilogue(m, p, s); err != nil {
			return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
		}
		v.Name += " + epilogue pass"
	}
	m.add(v, func() error {
		for _, f := range pre {
			if err := f(); err != nil {
				return err
			}
		}
		if err := product(); err != nil {
			return err
		}
		if tail != nil {
			return tail()
		}
		return nil
	}, nil)
	w := s.Work()
	w.FLOPs *= float64(pl.batch)
	w.Bytes = float64(p.TensorBytes())
	m.work = w
	return m, nil
}

// splitLauncher returns what makes the launch of one product of lesson 08's split (launch runs once
// per batch entry, after the entry's buffers are set): its split of A, its split of B and the
// product, where an operand stored transposed is split from that layout by split_transposed.cu, and
// nn.Linear's weight is split once after each Load (it does not change between runs).
func (b backend) splitLauncher(m *impl, hp *hopper.AccurateProblem, pl mmPlan) (func() (func() error, error), error) {
	prog, err := b.env.Build(kb.SplitTransposed(), kb.SplitTransposedKernel)
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(kb.SplitTransposedKernel)
	if err != nil {
		return nil, err
	}
	// splitT splits x (rows x cols), stored transposed as xt, into hi and lo (rowsOut x colsOut).
	splitT := func(xt *gpu.Buffer[float32], hi, lo *gpu.Buffer[uint16], rows, cols, rowsOut, colsOut int) func() error {
		cfg := gpu.Config{Grid: gpu.D2(gpu.CeilDiv(colsOut, 32), gpu.CeilDiv(rowsOut, 32)), Block: gpu.D2(32, 8)}
		return func() error {
			return k.Launch(cfg, xt, hi, lo, int32(rows), int32(cols), int32(rowsOut), int32(colsOut))
		}
	}
	s := pl.s
	return func() (func() error, error) {
		parts, err := hp.SplitParts(hopper.Split, "")
		if err != nil {
			return nil, err
		}
		h := parts.Halves
		sa, sb := parts.SplitA, parts.SplitB
		if pl.transA {
			sa = splitT(m.tensors[0], h[0], h[1], s.M, s.K, s.M, parts.KPad)
		}
		if pl.transB {
			sb = splitT(m.tensors[1], h[2], h[3], s.K, s.N, parts.KPad, parts.NPad)
		}
		if pl.linear {
			m.loaded = append(m.loaded, sb)
			sb = nil
		}
		return func() error {
			if err := sa(); err != nil {
				return err
			}
			if sb != nil {
				if err := sb(); err != nil {
					return err
				}
			}
			return parts.Product()
		}, nil
	}, nil
}

// transposer compiles transpose.cu and returns out = in^T for in (rows x cols).
func (b backend) transposer() (func(in, out *gpu.Buffer[float32], rows, cols int) error, error) {
	prog, err := b.env.Build(kb.Transpose(), kb.TransposeKernel)
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(kb.TransposeKernel)
	if err != nil {
		return nil, err
	}
	return func(in, out *gpu.Buffer[float32], rows, cols int) error {
		cfg := gpu.Config{Grid: gpu.D2(gpu.CeilDiv(cols, 32), gpu.CeilDiv(rows, 32)), Block: gpu.D2(32, 8)}
		return k.Launch(cfg, in, out, int32(rows), int32(cols))
	}, nil
}

// linearEpilogue compiles linear_epilogue.cu and returns its launch over the output: the bias is
// the problem's third tensor (the layer's bias, or problem 76's own).
func (b backend) linearEpilogue(m *impl, p kb.Problem, s matmul.Shape) (func() error, error) {
	mode, ok := kb.EpilogueMode(p.Op)
	if !ok || len(m.tensors) < 3 {
		return nil, fmt.Errorf("no epilogue for op %q", p.Op)
	}
	prog, err := b.env.Build(kb.LinearEpilogue(), kb.LinearEpilogueKernel)
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(kb.LinearEpilogueKernel)
	if err != nil {
		return nil, err
	}
	var s0, s1 float32
	if sc := p.TailScalars(); len(sc) > 0 {
		s0 = float32(sc[0])
		if len(sc) > 1 {
			s1 = float32(sc[1])
		}
	}
	n := m.out.Len()
	cfg := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(b.env.Session.Device, n/4+1, 256, 4)), Block: gpu.D1(256)}
	out, bias := m.out, m.tensors[2]
	return func() error {
		return k.Launch(cfg, out, bias, int64(n), int32(s.N), int32(mode), s0, s1)
	}, nil
}

// openGEMV runs the matrix-vector product with gemv.cu: a block per row, blocks looping over the
// rows, a few blocks per SM.
func (b backend) openGEMV(m *impl, pl mmPlan) (kb.Impl, error) {
	prog, err := b.env.Build(kb.GEMV(), kb.GEMVKernel)
	if err != nil {
		return m.fail(err)
	}
	k, err := prog.Kernel(kb.GEMVKernel)
	if err != nil {
		return m.fail(err)
	}
	s := pl.s
	blocks := s.M
	if d := b.env.Session.Device; d.SMs > 0 {
		blocks = min(s.M, 8*d.SMs) // 8 blocks of 256 threads fill an SM's 2048 threads
	}
	cfg := gpu.Config{Grid: gpu.D1(blocks), Block: gpu.D1(kb.GEMVThreads)}
	a, x, y := m.tensors[0], m.tensors[1], m.out
	m.add(kb.Variant{Name: "gemv.cu: a block per row, float4 loads", DType: "float32", Tol: matmul.Tolerance("float32", s.K),
		Note: "a matrix-vector product reads A once: it runs at the copy bandwidth, not on tensor cores"},
		func() error { return k.Launch(cfg, a, x, y, int32(s.M), int64(s.K)) }, nil)
	m.work = s.Work()
	return m, nil
}

// familyReference is the float64 output of n batch slices of a product of the family: t[0] holds
// the slices (rows of A, columns of A when it is stored transposed, batch entries), t[1] B whole (or
// its n batch entries), then the epilogue of a level-2 problem with its bias.
func familyReference(p kb.Problem, t [][]float32, n int) ([]float64, error) {
	pl := mmPlanOf(p)
	s := pl.s
	if pl.batched {
		out := make([]float64, 0, n*s.M*s.N)
		all := make([]int, s.M*s.N)
		for i := range all {
			all[i] = i
		}
		for i := 0; i < n; i++ {
			out = append(out, matmul.Reference(s, t[0][i*s.M*s.K:(i+1)*s.M*s.K], t[1][i*s.K*s.N:(i+1)*s.K*s.N], all)...)
		}
		return out, nil
	}
	a, bm := t[0], t[1]
	var bias []float32
	if pl.linear {
		if len(t) < 3 {
			return nil, fmt.Errorf("%s: no bias tensor", p.ID())
		}
		bias = t[2]
	}
	out := make([]float64, n*s.N)
	parallel.For(n, func(r int) {
		arow := make([]float64, s.K)
		for k := range arow {
			if pl.transA { // A is K x n after slicing
				arow[k] = float64(a[k*n+r])
			} else {
				arow[k] = float64(a[r*s.K+k])
			}
		}
		acc := out[r*s.N : (r+1)*s.N]
		if pl.transB { // B is N x K: a dot product per column
			for j := range acc {
				col := bm[j*s.K : (j+1)*s.K]
				var sum float64
				for k, av := range arow {
					sum += av * float64(col[k])
				}
				acc[j] = sum
			}
		} else {
			for k, av := range arow {
				for j, bv := range bm[k*s.N : (k+1)*s.N] {
					acc[j] += av * float64(bv)
				}
			}
		}
		if bias != nil {
			for j := range acc {
				acc[j] = p.Epilogue(acc[j], float64(bias[j]))
			}
		}
	})
	return out, nil
}

// viaFamily reports whether a problem runs through openFamily rather than openMatMul: every one
// but the plain products, which go there too where they are matrix-vector products, where the
// split runs on too few tiles (problem 6: the family's variant names its slices of K), or where
// the tests force the split.
func (b backend) viaFamily(p kb.Problem) bool {
	if p.Op != kb.MatMul {
		return true
	}
	pl, d := mmPlanOf(p), b.env.Session.Device
	return pl.gemv() || b.forceSplit || (hopperSplit(p, d) && fewTiles(pl.s, 1, d))
}

// openMatMulOrFamily is Open's case of the matrix products.
func (b backend) openMatMulOrFamily(p kb.Problem) (kb.Impl, error) {
	if !b.viaFamily(p) {
		return b.openMatMul(p)
	}
	return b.openFamily(p)
}

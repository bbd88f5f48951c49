package kernelbench

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/parallel"
	"github.com/cudalessons/cudalessons/lessons/reduce"
)

// --- the reductions and norms over dimension 1: dim_reduce.cu (sum, mean, max, min, argmax,
// argmin over a middle dimension), lesson 04's step 11 or 9 with LOG_SOFTMAX, rms_norm.cu,
// row_norm.cu.

// dimReduceOps are dim_reduce.cu's OP values.
var dimReduceOps = map[kb.Op]int{kb.SumDim: 0, kb.MeanDim: 1, kb.MaxDim: 2, kb.MinDim: 3, kb.ArgmaxDim: 4, kb.ArgminDim: 5}

// RMSNormMaxChannels is the most channels rms_norm.cu holds in a thread's registers.
const RMSNormMaxChannels = 128

// DimReduceSplit is BY of dim_reduce.cu on d: how many threads share an output column. One each
// while the outputs alone give every SM at least four waves of resident threads (the last wave's
// tail then idles under a quarter of the run); otherwise 2, 4 or 8, while each thread keeps at
// least 64 of the R values (8 rounds of its 8 loads in flight).
func DimReduceSplit(d gpu.DeviceInfo, outer, R, inner int) int {
	cols := outer * inner
	target := 4 * d.SMs * d.MaxThreadsPerSM
	by := 1
	for by < 8 && cols*by < target && R >= 2*by*64 {
		by *= 2
	}
	return by
}

// RowNormGrid is row_norm.cu's grid on d: one block per SM at most, and no more rows in flight
// (one per block) than three quarters of L2 holds, so that each row's second read hits L2.
func RowNormGrid(d gpu.DeviceInfo, rows, cols int) int {
	fit := d.L2Bytes * 3 / 4 / (4 * cols)
	return max(1, min(rows, d.SMs, fit))
}

// reductionTol is the float64 check of a reduction's outputs, from float32's rounding: sums of
// torch.rand's non-negative values (sumTol), exact values for max and min (a float32 of x) and for
// the indices, lesson 04's softmax check for log_softmax.
func reductionTol(p kb.Problem) check.Tolerance {
	_, R, _ := p.Reduced()
	switch p.Op {
	case kb.SumDim:
		return sumTol(R, 0)
	case kb.MeanDim:
		return sumTol(R, 1) // the division by R
	case kb.MaxDim, kb.MinDim, kb.ArgmaxDim, kb.ArgminDim:
		return Exact
	case kb.LogSoftmax:
		return reduce.SoftmaxTolerance(reduce.F32, nil)
	case kb.RMSNorm:
		return sumTol(R+1, 4) // C fused products; / C, + eps, sqrt, the division
	case kb.L1Norm:
		return sumTol(R, 2) // / cols, the division
	case kb.L2Norm:
		return sumTol(R+1, 2) // squares; sqrt, the division
	}
	return check.FP32
}

// Exact is the check of outputs that must equal the reference: the maximum or minimum of float32
// values is one of them, an index is an integer.
var Exact = check.Tolerance{Name: "exact", Why: "a float32 of x or an index: no rounding at all"}

// sumTol is the check of outputs that carry a float32 sum of n non-negative terms and k more
// roundings. Every partial sum of non-negative terms is at most the total, so each addition errs
// by at most u times the total, whatever the order: at most (n + k) u relative per element. The
// norm bound is the statistical one of the longest (sequential) order: additions err by a uniform
// fraction of at most u of partial sums growing to the total, u sqrt(n) / 3 relative RMS, taken at
// three standard deviations, plus the k roundings.
func sumTol(n, k int) check.Tolerance {
	u := check.U32
	return check.Tolerance{Name: fmt.Sprintf("fp32 sum of %d", n), RelL2: u * (math.Sqrt(float64(n)) + float64(k)), Rel: u * float64(n+k), Abs: 1e-45,
		Why: fmt.Sprintf("a float32 sum of %d non-negative terms and %d more roundings: (n + k) u relative per element, u (sqrt(n) + k) relative L2", n, k)}
}

func (b backend) openReduction(p kb.Problem) (kb.Impl, error) {
	switch p.Op {
	case kb.LogSoftmax:
		return b.openLogSoftmax(p)
	case kb.RMSNorm:
		return b.openRMSNorm(p)
	case kb.L1Norm, kb.L2Norm:
		return b.openRowNorm(p)
	}
	return b.openDimReduce(p)
}

// indexImpl is an impl whose output is int64 indices (argmax, argmin): Output poisons them with -1
// (every byte 0xFF), counts the indices outside [0, R) of the whole output as its non-finite ones,
// and returns the slices as float32 (exact below 2^24).
type indexImpl struct {
	*impl
	idx *gpu.Buffer[int64]
	R   int
}

// Output implements kernelbench.Impl.
func (m *indexImpl) Output(v int, idx []int) ([]float32, int, error) {
	if err := m.idx.Poison(); err != nil {
		return nil, 0, err
	}
	if err := m.runs[v](); err != nil {
		return nil, 0, err
	}
	all, err := m.idx.ToHost()
	if err != nil {
		return nil, 0, err
	}
	bad := 0
	for _, i := range all {
		if i < 0 || i >= int64(m.R) {
			bad++
		}
	}
	per := m.p.OutPer()
	got := make([]float32, 0, per*len(idx))
	for _, s := range idx {
		for _, i := range all[s*per : (s+1)*per] {
			got = append(got, float32(i))
		}
	}
	return got, bad, nil
}

func (b backend) openDimReduce(p kb.Problem) (kb.Impl, error) {
	outer, R, inner := p.Reduced()
	if outer > 65535 || R > math.MaxInt32 || inner > math.MaxInt32 {
		return nil, fmt.Errorf("%s: x viewed as (%d, %d, %d): dim_reduce.cu takes at most 65535 outer slices (the grid's y) and R, inner below 2^31", p.ID(), outer, R, inner)
	}
	m := newImpl(b.env, p)
	x, err := m.alloc("x", p.Tensors[0].Len())
	if err != nil {
		return m.fail(err)
	}
	m.tensors = []*gpu.Buffer[float32]{x}
	d := b.env.Session.Device
	by := DimReduceSplit(d, outer, R, inner)
	prog, err := b.env.BuildWith(kb.DimReduce(), compile.Options{Defines: []string{fmt.Sprintf("OP=%d", dimReduceOps[p.Op]), fmt.Sprintf("BY=%d", by)}}, kb.DimReduceKernel)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	k, err := prog.Kernel(kb.DimReduceKernel)
	if err != nil {
		return m.fail(err)
	}
	bx := 256 / by
	cfg := gpu.Config{Grid: gpu.D2(gpu.CeilDiv(inner, bx), outer), Block: gpu.D2(bx, by)}
	v := kb.Variant{Name: fmt.Sprintf("dim_reduce.cu, %d threads a column", by), DType: "float32", Tol: reductionTol(p),
		Note: "a thread per output column, consecutive columns on consecutive threads, 8 loads in flight"}
	m.work = bench.Work{Bytes: float64(p.TensorBytes())}
	if !p.IndexOutput() {
		out, err := m.alloc("the output", p.OutLen())
		if err != nil {
			return m.fail(err)
		}
		m.out = out
		m.add(v, func() error { return k.Launch(cfg, x, out, int32(R), int32(inner)) }, nil)
		return m, nil
	}
	idx, err := gpu.Alloc[int64](b.env.Session, p.OutLen())
	if err != nil {
		return m.fail(fmt.Errorf("%s: allocating the indices: %w", p.ID(), err))
	}
	m.frees = append(m.frees, func() { idx.Free() })
	v.DType = "float32 in, int64 out"
	m.add(v, func() error { return k.Launch(cfg, x, idx, int32(R), int32(inner)) }, nil)
	return &indexImpl{impl: m, idx: idx, R: R}, nil
}

func (b backend) openLogSoftmax(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	rows, cols := p.Out[0], p.Out[1]
	run, step, verify, free, err := reduce.LogSoftmaxLauncher(b.env, m.tensors[0], m.out, rows, cols)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	m.frees = append(m.frees, free)
	m.add(kb.Variant{Name: step, DType: "float32", Tol: reductionTol(p)}, run, verify)
	m.work = reduce.SoftmaxWork(reduce.F32, rows, cols)
	return m, nil
}

func (b backend) openRMSNorm(p kb.Problem) (kb.Impl, error) {
	x := p.Tensors[0].Shape
	if len(x) < 3 || x[1] > RMSNormMaxChannels {
		return nil, fmt.Errorf("%s: x %v: rms_norm.cu takes (B, C, ...) with at most %d channels (its registers)", p.ID(), x, RMSNormMaxChannels)
	}
	c := x[1]
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	parts := RMSNormParts(c)
	k, err := b.rmsNormKernel(c, parts)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	hw := p.Tensors[0].Len() / (x[0] * c)
	positions := x[0] * hw
	cfg := RMSNormConfig(positions, parts)
	in, out := m.tensors[0], m.out
	m.add(kb.Variant{Name: fmt.Sprintf("rms_norm.cu, %d channels in registers, %d threads a position", c, parts), DType: "float32", Tol: reductionTol(p)},
		func() error { return k.Launch(cfg, in, out, int64(positions), int64(hw), float32(p.Eps)) }, nil)
	m.work = bench.Work{Bytes: float64(p.TensorBytes())}
	return m, nil
}

// RMSNormParts is how many threads rms_norm.cu gives a position of c channels: 2 where c allows it
// (each thread holds half the channels, so twice the threads fit an SM and each load instruction
// reads two 64-byte runs), else 1.
func RMSNormParts(c int) int {
	if c%2 == 0 {
		return 2
	}
	return 1
}

// RMSNormConfig is rms_norm.cu's launch over positions with parts threads a position: a trip per
// warp, no loop (as unary.cu, where a single trip per thread measured fastest against grid-stride
// loops of 1 to 32 waves).
func RMSNormConfig(positions, parts int) gpu.Config {
	warps := gpu.CeilDiv(positions, 32/parts)
	return gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(warps, 8))), Block: gpu.D1(256)}
}

// rmsNormKernel builds rms_norm.cu for c channels, parts threads a position.
func (b backend) rmsNormKernel(c, parts int) (*gpu.Kernel, error) {
	prog, err := b.env.BuildWith(kb.RMSNormSource(), compile.Options{Defines: []string{fmt.Sprintf("C=%d", c), fmt.Sprintf("PARTS=%d", parts)}}, kb.RMSNormKernel)
	if err != nil {
		return nil, err
	}
	return prog.Kernel(kb.RMSNormKernel)
}

func (b backend) openRowNorm(p kb.Problem) (kb.Impl, error) {
	rows, cols := p.Out[0], p.Out[1]
	if len(p.Out) != 2 || rows > math.MaxInt32 || cols > math.MaxInt32 {
		return nil, fmt.Errorf("%s: row_norm.cu takes a 2-D x of fewer than 2^31 rows and columns, not %v", p.ID(), p.Out)
	}
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	norm := 1
	if p.Op == kb.L2Norm {
		norm = 2
	}
	prog, err := b.env.BuildWith(kb.RowNorm(), compile.Options{Defines: []string{fmt.Sprintf("NORM=%d", norm)}}, kb.RowNormKernel)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	k, err := prog.Kernel(kb.RowNormKernel)
	if err != nil {
		return m.fail(err)
	}
	grid := RowNormGrid(b.env.Session.Device, rows, cols)
	cfg := gpu.Config{Grid: gpu.D1(grid), Block: gpu.D1(1024)}
	in, out := m.tensors[0], m.out
	m.add(kb.Variant{Name: fmt.Sprintf("row_norm.cu, L%d, %d blocks walking the rows", norm, grid), DType: "float32", Tol: reductionTol(p),
		Note: "each row read twice, the second time from L2"}, func() error { return k.Launch(cfg, in, out, int32(rows), int32(cols)) }, nil)
	m.work = bench.Work{Bytes: float64(p.TensorBytes())}
	return m, nil
}

// reductionReference is the float64 output of n batch slices of a reduction or norm over
// dimension 1, computed directly from its formula.
func reductionReference(p kb.Problem, t [][]float32, n int) ([]float64, error) {
	_, R, inner := p.Reduced()
	per := p.OutPer()
	out := make([]float64, n*per)
	x := t[0]
	in := R * inner
	switch p.Op {
	case kb.SumDim, kb.MeanDim, kb.MaxDim, kb.MinDim, kb.ArgmaxDim, kb.ArgminDim:
		parallel.For(n, func(s int) {
			xs, o := x[s*in:(s+1)*in], out[s*per:(s+1)*per]
			best := make([]float64, inner)
			for i := range inner {
				best[i] = float64(xs[i])
			}
			for r := 1; r < R; r++ {
				row := xs[r*inner : (r+1)*inner]
				for i, v := range row {
					f := float64(v)
					switch p.Op {
					case kb.SumDim, kb.MeanDim:
						best[i] += f
					case kb.MaxDim:
						best[i] = math.Max(best[i], f)
					case kb.MinDim:
						best[i] = math.Min(best[i], f)
					case kb.ArgmaxDim:
						if f > best[i] { // strict: the first index wins a tie
							best[i], o[i] = f, float64(r)
						}
					case kb.ArgminDim:
						if f < best[i] {
							best[i], o[i] = f, float64(r)
						}
					}
				}
			}
			switch p.Op {
			case kb.SumDim, kb.MaxDim, kb.MinDim:
				copy(o, best)
			case kb.MeanDim:
				for i := range o {
					o[i] = best[i] / float64(R)
				}
			}
		})
	case kb.LogSoftmax:
		parallel.For(n, func(s int) {
			copy(out[s*per:(s+1)*per], reduce.LogSoftmaxRow(x[s*per:(s+1)*per]))
		})
	case kb.RMSNorm:
		parallel.For(n, func(s int) {
			xs := x[s*per : (s+1)*per]
			for i := range inner {
				var ss float64
				for c := range R {
					v := float64(xs[c*inner+i])
					ss += v * v
				}
				d := math.Sqrt(ss/float64(R) + p.Eps)
				for c := range R {
					out[s*per+c*inner+i] = float64(xs[c*inner+i]) / d
				}
			}
		})
	case kb.L1Norm, kb.L2Norm:
		parallel.For(n, func(s int) {
			row := x[s*per : (s+1)*per]
			var acc float64
			for _, v := range row {
				if p.Op == kb.L1Norm {
					acc += math.Abs(float64(v))
				} else {
					acc += float64(v) * float64(v)
				}
			}
			norm := math.Sqrt(acc)
			if p.Op == kb.L1Norm {
				norm = acc / float64(len(row))
			}
			for j, v := range row {
				out[s*per+j] = float64(v) / norm
			}
		})
	default:
		return nil, fmt.Errorf("kernelbench %s: no reference for op %q", p.ID(), p.Op)
	}
	return out, nil
}

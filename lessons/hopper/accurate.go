package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Split is step 5: float32 A and B in, float32 C out, float32-accurate from three fp16 products on
// wgmma (x = hi + lo / 2^11, each part fp16; A B ~= Ahi Bhi + (Ahi Blo + Alo Bhi) / 2^11), on step 4's
// clusters, multicast and persistent blocks, with 128 x 128 tiles.
var Split = Step{Name: "5 fp16x3 split", File: "5_split.cu", Kernel: "hg_split_product", TMA: true, BM: 128, BN: 128, Threads: 384,
	StageBytes: 2 * (2*128*64 + 2*64*128), Cluster: 2,
	Idea: "float32 accuracy: inputs split into fp16 hi + lo, three wgmma products, each k tile of hi x hi added in rounded float32"}

// SplitDType is the record dtype of the split step (lesson 03's name for the same split).
const SplitDType = "fp16x3"

// SplitBlock is the block of hg_split_halves, launched grid-stride over 4 waves.
const SplitBlock = 256

// AccurateProblem is a float32 product (lesson 03's problem: inputs, sample, float64 reference and
// buffers) with the fp16 halves the split step multiplies.
type AccurateProblem struct {
	*matmul.Problem
	env    *lab.Env
	halves [4]*gpu.Buffer[uint16] // Ahi, Alo, Bhi, Blo
	maps   [4]*gpu.TensorMap
	// clusters, when above 0, caps the grid at that many clusters (the tests' one-cluster walk).
	clusters int
}

// NewAccurateProblem draws lesson 03's inputs of shape s from seed (uniform in [-1, 1)), uploads them
// and computes the float64 reference on lesson 03's sample.
func NewAccurateProblem(env *lab.Env, s matmul.Shape, seed uint64) (*AccurateProblem, error) {
	if err := matmul.CheckMemory(env, s, true); err != nil {
		return nil, err
	}
	p, err := matmul.NewCheckedProblem(env, s, seed)
	if err != nil {
		return nil, err
	}
	return &AccurateProblem{Problem: p, env: env}, nil
}

// Free releases the problem's buffers.
func (p *AccurateProblem) Free() {
	for _, b := range p.halves {
		b.Free()
	}
	p.Problem.Free()
}

// prepare allocates the halves and makes their tensor maps, once.
func (p *AccurateProblem) prepare(st Step) error {
	if p.halves[0] != nil {
		return nil
	}
	s := p.Shape
	dims := [4][2]int{{s.M, s.K}, {s.M, s.K}, {s.K, s.N}, {s.K, s.N}}
	for i, d := range dims {
		b, err := gpu.Alloc[uint16](p.env.Session, d[0]*d[1])
		if err != nil {
			return fmt.Errorf("hopper %v: the split's fp16 halves: %w", s, err)
		}
		p.halves[i] = b
		box := 64 // rows of K for B
		if i < 2 {
			box = st.BM
		}
		if p.maps[i], err = p.env.Session.NewTensorMap(gpu.TensorMapSpec{Base: b, DType: gpu.TensorFP16, Rows: d[0], Cols: d[1],
			BoxRows: box, BoxCols: 64, Swizzle: gpu.Swizzle128B}); err != nil {
			return fmt.Errorf("hopper %v: the split's tensor maps: %w", s, err)
		}
	}
	return nil
}

// Launcher plans the split step on the problem's shape (refusing what it cannot take), compiles it
// (code, when not empty, replaces its source) and returns a function that queues the split of A, the
// split of B and the product.
func (p *AccurateProblem) Launcher(st Step, code string) (func() error, *lab.Program, gpu.Config, error) {
	d := p.env.Session.Device
	cfg, err := st.Plan(p.Shape, d)
	if err != nil {
		return nil, nil, cfg, err
	}
	src, err := st.Source(code)
	if err != nil {
		return nil, nil, cfg, err
	}
	prog, err := p.env.BuildWith(src, st.Options(FP16, d), st.Kernel, "hg_split_halves")
	if err != nil {
		return nil, nil, cfg, err
	}
	k, err := prog.Kernel(st.Kernel)
	if err != nil {
		return nil, prog, cfg, err
	}
	split, err := prog.Kernel("hg_split_halves")
	if err != nil {
		return nil, prog, cfg, err
	}
	if err := p.prepare(st); err != nil {
		return nil, prog, cfg, err
	}
	fit, err := k.MaxActiveClusters(cfg.Grid.X, cfg.Block.X, cfg.SharedBytes)
	if err != nil {
		return nil, prog, cfg, err
	}
	if fit == 0 {
		return nil, prog, cfg, gpu.Unsupported("hopper %s: the driver fits no cluster of %d blocks with %d bytes of shared memory each on this GPU", st.Name, st.Cluster, cfg.SharedBytes)
	}
	cfg.Grid.X = min(cfg.Grid.X, st.Cluster*fit)
	if p.clusters > 0 {
		cfg.Grid.X = min(cfg.Grid.X, st.Cluster*p.clusters)
	}
	s, h, m := p.Shape, p.halves, p.maps
	na, nb := s.M*s.K, s.K*s.N
	ca := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, na, SplitBlock, 4)), Block: gpu.D1(SplitBlock)}
	cb := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, nb, SplitBlock, 4)), Block: gpu.D1(SplitBlock)}
	args := []any{m[0], m[1], m[2], m[3], p.Cd, int32(s.M), int32(s.N), int32(s.K)}
	return func() error {
		if err := split.Launch(ca, p.Ad, h[0], h[1], int64(na)); err != nil {
			return err
		}
		if err := split.Launch(cb, p.Bd, h[2], h[3], int64(nb)); err != nil {
			return err
		}
		return k.Launch(cfg, args...)
	}, prog, cfg, nil
}

// Tol is the split step's tolerance on K-term dot products: lesson 03's for its fp16 split.
func (p *AccurateProblem) Tol() check.Tolerance { return matmul.Tolerance(SplitDType, p.Shape.K) }

// Check runs the step once on a NaN-poisoned C and compares the sample with the float64 reference.
func (p *AccurateProblem) Check(st Step, code string) (check.Result, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	got, err := p.Output(run)
	if err != nil {
		return check.Result{}, fmt.Errorf("hopper %s on %v: %w", st.Name, p.Shape, err)
	}
	return check.Compare(got, p.Want(), p.Tol()), nil
}

// Measure checks the step (a failed check is an error), then times the split and the product.
func (p *AccurateProblem) Measure(caseName string, st Step, code string) (record.Record, error) {
	rec := record.Record{Case: caseName, Variant: st.Name, Kind: "kernel", DType: SplitDType, Shape: p.Shape.String(), Size: int64(p.Shape.M),
		Tol: p.Tol().Name, Note: "checked on " + p.Sample.What + "; the time includes splitting A and B"}
	res, err := p.Check(st, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		return rec, fmt.Errorf("hopper %s on %v: %w", st.Name, p.Shape, res.Err())
	}
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, p.Shape.Work(), run)
}

// Report is the compile report of the split step at this problem's launch.
func (p *AccurateProblem) Report() (record.KernelReport, error) {
	_, prog, cfg, err := p.Launcher(Split, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(Split.Kernel, cfg.Block.Count(), cfg.SharedBytes), nil
}

// What says which elements a check compares.
func (p *AccurateProblem) What() string { return p.Sample.What }

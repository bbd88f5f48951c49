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
// clusters, multicast and persistent blocks, with 128 x 128 tiles. Its split pads K and N to
// multiples of 8, so it takes any shape. Where C has too few tiles to keep the clusters busy, K is
// cut into slices (Step.Slices) summed in order by hg_sum_slices.
var Split = Step{Name: "5 fp16x3 split", File: "5_split.cu", Kernel: "hg_split_product", TMA: true, BM: 128, BN: 128, Threads: 384,
	StageBytes: 2 * (2*128*64 + 2*64*128), Cluster: 2, Products: SplitDType, KMult: 1, NMult: 1, After: []string{"hg_sum_slices"},
	Idea: "float32 accuracy: inputs split into fp16 hi + lo, three wgmma products, each k tile of hi x hi added in rounded float32"}

// TF32 is step 6: float32 in and out at TF32 accuracy on wgmma; B is transposed (and rounded to
// TF32) first, since wgmma takes TF32 operands only K-major.
var TF32 = Step{Name: "6 TF32", File: "6_tf32.cu", Kernel: "hg_tf32", TMA: true, BM: 128, BN: 256, Threads: 384,
	StageBytes: 4 * (128*32 + 256*32), Cluster: 2, Products: "tf32", KMult: 4, NMult: 1,
	Idea: "TF32 wgmma m64n256k8 with both operands K-major: B transposed and rounded to TF32 by a first kernel"}

// Accurate are the steps that take float32 A and B and return float32 C.
var Accurate = []Step{Split, TF32}

// SplitDType is the record dtype of the split step (lesson 03's name for the same split).
const SplitDType = "fp16x3"

// SplitBlock is the threads of a block of hg_split_halves.
const SplitBlock = 256

// SplitHalvesConfig is hg_split_halves' launch over a rowsOut x colsOut output: 4 columns a thread,
// a block as wide as the row's quads (a multiple of 32, at most SplitBlock) and as many rows tall
// as fill SplitBlock threads, at most 65535 rows of blocks (the rows past them walked by the
// threads).
func SplitHalvesConfig(rowsOut, colsOut int) gpu.Config {
	quads := gpu.CeilDiv(colsOut, 4)
	bx := min(SplitBlock, gpu.CeilDiv(quads, 32)*32)
	by := SplitBlock / bx
	return gpu.Config{Grid: gpu.D2(gpu.CeilDiv(quads, bx), min(65535, gpu.CeilDiv(rowsOut, by))), Block: gpu.D2(bx, by)}
}

// AccurateProblem is a float32 product (lesson 03's problem: inputs, sample, float64 reference and
// buffers) with what the float32-in steps make of it first: the fp16 halves the split multiplies,
// and B transposed for TF32.
type AccurateProblem struct {
	*matmul.Problem
	env    *lab.Env
	halves [4]*gpu.Buffer[uint16] // Ahi, Alo, Bhi, Blo
	maps   [4]*gpu.TensorMap
	bt     *gpu.Buffer[float32] // B transposed, rows padded to a multiple of 4 floats
	work   *gpu.Buffer[float32] // the split's partial products, one M x N per slice of K
	tmaps  [2]*gpu.TensorMap    // A (read as TF32: TMA converts on the way) and Bt, for TF32
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

// AccurateFrom makes lesson 03's problem p (its buffers, sample and reference) a problem of the
// float32-in steps; Free then frees p too.
func AccurateFrom(env *lab.Env, p *matmul.Problem) *AccurateProblem {
	return &AccurateProblem{Problem: p, env: env}
}

// Free releases the problem's buffers.
func (p *AccurateProblem) Free() {
	for _, b := range p.halves {
		b.Free()
	}
	p.bt.Free()
	p.work.Free()
	p.Problem.Free()
}

// pad8 rounds n up to a multiple of 8 (16 bytes of fp16).
func pad8(n int) int { return (n + 7) / 8 * 8 }

// paddedK is Bt's row length: K rounded up to a multiple of 4 floats (16 bytes, TMA's rule).
func paddedK(k int) int { return (k + 3) / 4 * 4 }

// prepareTF32 allocates Bt and makes the tensor maps of A and Bt, once.
func (p *AccurateProblem) prepareTF32(st Step) error {
	if p.bt != nil {
		return nil
	}
	s := p.Shape
	bt, err := gpu.Alloc[float32](p.env.Session, s.N*paddedK(s.K))
	if err != nil {
		return fmt.Errorf("hopper %v: B transposed for TF32: %w", s, err)
	}
	p.bt = bt
	for i, spec := range []gpu.TensorMapSpec{
		{Base: p.Ad, DType: gpu.TensorTF32, Rows: s.M, Cols: s.K, BoxRows: st.BM, BoxCols: 32, Swizzle: gpu.Swizzle128B},
		{Base: bt, DType: gpu.TensorFP32, Rows: s.N, Cols: paddedK(s.K), BoxRows: st.BN / st.Cluster, BoxCols: 32, Swizzle: gpu.Swizzle128B},
	} {
		if p.tmaps[i], err = p.env.Session.NewTensorMap(spec); err != nil {
			return fmt.Errorf("hopper %v: TF32's tensor maps: %w", s, err)
		}
	}
	return nil
}

// prepare allocates the halves and makes their tensor maps, once.
func (p *AccurateProblem) prepare(st Step) error {
	if p.halves[0] != nil {
		return nil
	}
	s := p.Shape
	kp, np := pad8(s.K), pad8(s.N)
	dims := [4][2]int{{s.M, kp}, {s.M, kp}, {kp, np}, {kp, np}}
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

// Launcher plans a float32-in step on the problem's shape (refusing what it cannot take), compiles
// it (code, when not empty, replaces its source) and returns a function that queues what it runs:
// for the split, the split of A, the split of B and the product; for TF32, the transpose of B and
// the product.
func (p *AccurateProblem) Launcher(st Step, code string) (func() error, *lab.Program, gpu.Config, error) {
	if st.Products == "tf32" {
		return p.tf32Launcher(st, code)
	}
	parts, prog, cfg, err := p.splitParts(st, code)
	if err != nil {
		return nil, prog, cfg, err
	}
	return func() error {
		if err := parts.SplitA(); err != nil {
			return err
		}
		if err := parts.SplitB(); err != nil {
			return err
		}
		return parts.Product()
	}, prog, cfg, nil
}

// SplitParts are the three launches the split step's Launcher queues, apart: the split of A (read
// from the problem's Ad when it runs) into its fp16 halves, the split of B (from Bd), and the product
// of the halves into Cd (the Cd the parts were made with). A caller that keeps A or B in another
// layout fills their halves itself (Halves) in place of SplitA or SplitB; one whose B does not change
// between runs (a model's weight) may split it once.
type SplitParts struct {
	SplitA, SplitB, Product func() error
	// Halves are Ahi and Alo (M x KPad) and Bhi and Blo (KPad x NPad), fp16 (hi = fp16(x),
	// lo = fp16((x - hi) * SplitLoScale)), zero past K and N.
	Halves     [4]*gpu.Buffer[uint16]
	KPad, NPad int
}

// SplitLoScale is the factor of the split's low halves (5_split.cu's LO_SCALE, 2^11).
const SplitLoScale = 2048

// SplitParts plans the split step (Split or a build of it) on the problem's shape, compiles it
// (code, when not empty, replaces its source) and returns its launches apart.
func (p *AccurateProblem) SplitParts(st Step, code string) (SplitParts, error) {
	if st.Products == "tf32" {
		return SplitParts{}, fmt.Errorf("hopper %s: not a split step", st.Name)
	}
	parts, _, _, err := p.splitParts(st, code)
	return parts, err
}

func (p *AccurateProblem) splitParts(st Step, code string) (SplitParts, *lab.Program, gpu.Config, error) {
	k, split, prog, cfg, err := p.setUp(st, code, "hg_split_halves", p.prepare)
	if err != nil {
		return SplitParts{}, prog, cfg, err
	}
	s, h := p.Shape, p.halves
	kp, np := pad8(s.K), pad8(s.N)
	ca, cb := SplitHalvesConfig(s.M, kp), SplitHalvesConfig(kp, np)
	product, err := p.slicedProduct(st, k, prog, cfg, kp)
	if err != nil {
		return SplitParts{}, prog, cfg, err
	}
	return SplitParts{
		SplitA: func() error {
			return split.Launch(ca, p.Ad, h[0], h[1], int32(s.M), int32(s.K), int32(s.M), int32(kp))
		},
		SplitB: func() error {
			return split.Launch(cb, p.Bd, h[2], h[3], int32(s.K), int32(s.N), int32(kp), int32(np))
		},
		Product: product,
		Halves:  h, KPad: kp, NPad: np,
	}, prog, cfg, nil
}

// slicedProduct is the split's product of the halves into Cd (K padded to kp: its zeros add
// nothing): one launch, or with slices of K (Step.Slices) the product into the workspace (made
// once) and hg_sum_slices into Cd.
func (p *AccurateProblem) slicedProduct(st Step, k *gpu.Kernel, prog *lab.Program, cfg gpu.Config, kp int) (func() error, error) {
	s, m := p.Shape, p.maps
	slices := st.Slices(s, p.env.Session.Device)
	if slices == 1 {
		return func() error {
			return k.Launch(cfg, m[0], m[1], m[2], m[3], p.Cd, int32(s.M), int32(s.N), int32(kp), int32(1))
		}, nil
	}
	sum, err := prog.Kernel("hg_sum_slices")
	if err != nil {
		return nil, err
	}
	mn := s.M * s.N
	if p.work == nil || p.work.Len() < slices*mn {
		p.work.Free()
		if p.work, err = gpu.Alloc[float32](p.env.Session, slices*mn); err != nil {
			return nil, fmt.Errorf("hopper %s on %v: the workspace of %d slices of K: %w", st.Name, s, slices, err)
		}
	}
	// launched as lesson 03's sum of its slices (mm_sum_slices) is
	cs := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(p.env.Session.Device, mn, matmul.SplitBlock, matmul.SplitWaves)), Block: gpu.D1(matmul.SplitBlock)}
	return func() error {
		if err := k.Launch(cfg, m[0], m[1], m[2], m[3], p.work, int32(s.M), int32(s.N), int32(kp), int32(slices)); err != nil {
			return err
		}
		return sum.Launch(cs, p.work, p.Cd, int64(mn), int32(slices))
	}, nil
}

// Tol is a float32-in step's tolerance on K-term dot products: lesson 03's for the same products.
func (p *AccurateProblem) Tol(st Step) check.Tolerance {
	return matmul.Tolerance(st.Products, p.Shape.K)
}

// Check runs the step once on a NaN-poisoned C and compares the sample with the float64 reference.
func (p *AccurateProblem) Check(st Step, code string) (check.Result, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	return p.checkRun(st, run)
}

// checkRun is Check of a launch already made.
func (p *AccurateProblem) checkRun(st Step, run func() error) (check.Result, error) {
	got, err := p.Output(run)
	if err != nil {
		return check.Result{}, fmt.Errorf("hopper %s on %v: %w", st.Name, p.Shape, err)
	}
	return check.Compare(got, p.Want(), p.Tol(st)), nil
}

// Measure checks the step (a failed check is an error), then times the launches it checked: the
// split and the product, or the transpose and the product.
func (p *AccurateProblem) Measure(caseName string, st Step, code string) (record.Record, error) {
	first := "splitting A and B"
	if st.Products == "tf32" {
		first = "transposing B"
	}
	rec := record.Record{Case: caseName, Variant: st.Name, Kind: "kernel", DType: st.Products, Shape: p.Shape.String(), Size: int64(p.Shape.M),
		Tol: p.Tol(st).Name, Note: "checked on " + p.Sample.What + "; the time includes " + first}
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return measureChecked(p.env, rec, run, p.Shape.Work(), func() (check.Result, error) { return p.checkRun(st, run) })
}

// Report is the compile report of a float32-in step at this problem's launch.
func (p *AccurateProblem) Report(st Step) (record.KernelReport, error) {
	return reportAt(p.Launcher, st)
}

// What says which elements a check compares.
func (p *AccurateProblem) What() string { return p.Sample.What }

// tf32Launcher is Launcher for the TF32 step.
func (p *AccurateProblem) tf32Launcher(st Step, code string) (func() error, *lab.Program, gpu.Config, error) {
	k, tr, prog, cfg, err := p.setUp(st, code, "hg_transpose_tf32", p.prepareTF32)
	if err != nil {
		return nil, prog, cfg, err
	}
	s := p.Shape
	kp := paddedK(s.K)
	ct := gpu.Config{Grid: gpu.D2(gpu.CeilDiv(s.N, 32), gpu.CeilDiv(kp, 32)), Block: gpu.D2(32, 8)}
	args := []any{p.tmaps[0], p.tmaps[1], p.Cd, int32(s.M), int32(s.N), int32(s.K)}
	return func() error {
		if err := tr.Launch(ct, p.Bd, p.bt, int32(s.K), int32(s.N), int32(kp)); err != nil {
			return err
		}
		return k.Launch(cfg, args...)
	}, prog, cfg, nil
}

// setUp is what both float32-in steps do before their launches: plan st on the problem's shape,
// compile it (code replacing its source when not empty), look up its product kernel and the kernel
// first runs before it, make its buffers and tensor maps (prepare), and cut the persistent grid.
func (p *AccurateProblem) setUp(st Step, code, first string, prepare func(Step) error) (k, firstK *gpu.Kernel, prog *lab.Program, cfg gpu.Config, err error) {
	d := p.env.Session.Device
	if cfg, err = st.Plan(p.Shape, d); err != nil {
		return
	}
	src, err := st.Source(code)
	if err != nil {
		return
	}
	if prog, err = p.env.BuildWith(src, st.Options(FP16, d), append([]string{st.Kernel, first}, st.After...)...); err != nil {
		return
	}
	if k, err = prog.Kernel(st.Kernel); err != nil {
		return
	}
	if firstK, err = prog.Kernel(first); err != nil {
		return
	}
	if err = prepare(st); err != nil {
		return
	}
	cfg, err = fitClusters(st, k, cfg, p.clusters)
	return
}

// fitClusters cuts a persistent step's grid to the clusters the driver fits at once (and to most,
// when above 0: the tests' one-cluster walk), refusing a GPU that fits none.
func fitClusters(st Step, k *gpu.Kernel, cfg gpu.Config, most int) (gpu.Config, error) {
	fit, err := k.MaxActiveClusters(cfg.Grid.X, cfg.Block.X, cfg.SharedBytes)
	if err != nil {
		return cfg, err
	}
	if fit == 0 {
		return cfg, gpu.Unsupported("hopper %s: the driver fits no cluster of %d blocks of %d threads with %d bytes of shared memory each on this GPU", st.Name, st.Cluster, cfg.Block.X, cfg.SharedBytes)
	}
	cfg.Grid.X = min(cfg.Grid.X, st.Cluster*fit)
	if most > 0 {
		cfg.Grid.X = min(cfg.Grid.X, st.Cluster*most)
	}
	return cfg, nil
}

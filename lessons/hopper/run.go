package hopper

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Lesson is lesson 08 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Hopper's tensor cores: wgmma, TMA, warp specialization and clusters",
	Run: Run, Tables: Tables, Figures: Figures, Plan: Plan, Steps: StepChecks, Compare: []string{FP16, BF16}}

// Seed is the seed of the inputs at the lesson's shape.
const Seed = 8

// Lesson03 is lesson 03's fastest 16-bit product, measured beside the ladder: mma.sync m16n8k16
// with ldmatrix and a cp.async pipeline, on fp16 halves of float32 inputs, float32 out.
const Lesson03 = "lesson 03: mma.sync fp16 (hi x hi)"

// SweepSizes are the square sizes of the sweep.
func SweepSizes(quick bool) []int {
	if quick {
		return []int{1024, 4096}
	}
	return []int{512, 1024, 2048, 4096, 8192}
}

// Shapes are the shapes off the tiles on which the last step is timed beside cuBLAS: M, N and K
// off the 128 x 256 x 64 tiles (K and N multiples of 8, as TMA's row strides need).
var Shapes = []matmul.Shape{{M: 1000, N: 3000, K: 776}, {M: 4095, N: 4088, K: 4088}, {M: 513, N: 136, K: 1032}, {M: 255, N: 256, K: 264}}

// Best is the last 16-bit step, the one the sweep and the 16-bit shapes off the tiles time.
var Best = Steps[len(Steps)-1]

// sweepName is the sweep's record name of a variant (a step or cuBLAS) in a format.
func sweepName(variant, dtype string) string { return variant + " " + dtype }

// Plan is what Run measures: every step and variant in both formats at 4096^3 with cuBLAS, the
// awkward shapes, and the sweep.
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	a := Article.String()
	pts := []lab.Point{lab.Headline(FP16, a), lab.Headline(BF16, a), lab.Headline(Float32, a)}
	for _, s := range matmul.Awkward {
		pts = append(pts, lab.Headline(Awkward, s.String()))
	}
	for _, s := range Shapes {
		pts = append(pts, lab.Headline("shapes", s.String()))
	}
	for _, n := range SweepSizes(quick) {
		pts = append(pts, lab.SweepPoint("sweep", matmul.Shape{M: n, N: n, K: n}.String()))
	}
	return append(pts, lab.Headline(ConvCase, conv.Deep.Short()))
}

// StepChecks checks every step and variant on d at the lesson's shape (the convolutions at lesson
// 05's deep layer): its declared need (Hopper only), then its plan. On any other GPU every one is
// refused, naming lesson 03's steps instead.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, st := range AllSteps() {
		c := lab.CheckStep(kh.Kernels, st.Name, st.File, st.DefinesOn(FP16, d), d, func() error {
			_, err := st.headline(d)
			return err
		})
		if !c.Runs() {
			c.Instead = "lesson 03's tensor-core steps (mma.sync)"
		}
		out = append(out, c)
	}
	return out
}

// Run measures, in one process: cuBLAS through PyTorch in fp16 and bf16 at every shape, every step
// and variant in fp16 and bf16 at 4096^3 (checked on a NaN-poisoned output, then timed), the 16-bit
// shapes off the tiles and the size sweep; lesson 03's fastest 16-bit product; the float32 case
// (addAccurate); and the deep convolution (addConv). On a GPU other than a Hopper every step is
// refused (recorded, with the need) and only the baselines and lessons 03's and 05's steps run.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	refused := lab.Lesson{Steps: StepChecks}.RefusedOn(env.Device())
	sweep := SweepSizes(quick)
	all := append(append([]Step{}, Steps...), Variants...)
	prog := show.NewProgress("lesson 08", 4+2*len(all)+len(Shapes)+2*len(sweep))
	defer prog.Done()

	shapes := append([]matmul.Shape{Article}, Shapes...)
	for _, n := range sweep {
		if n != Article.M {
			shapes = append(shapes, matmul.Shape{M: n, N: n, K: n})
		}
	}
	addTorch(env, run, shapes)
	prog.Step("cuBLAS through PyTorch")

	if len(refused) == 0 {
		for _, dtype := range DTypes {
			p, err := NewProblem(env, Article, dtype, Seed)
			if err != nil {
				return nil, err
			}
			for _, st := range all {
				rec, err := p.Measure(dtype, st, "")
				if err != nil {
					p.Free()
					return nil, err
				}
				run.Add(rec)
				if rep, err := p.Report(st); err == nil && dtype == FP16 && st.Defines == nil { // the steps' reports only
					run.Kernels = append(run.Kernels, rep)
				}
				prog.Step(st.Name + " " + dtype)
			}
			p.Free()
		}
		for i, s := range Shapes {
			rec, err := measureNew(env, "shapes", Best, s, FP16, uint64(90+i))
			if err != nil {
				return nil, err
			}
			run.Add(rec)
			prog.Step("shape " + s.String())
		}
		for _, n := range sweep {
			for _, dtype := range DTypes {
				rec, err := measureNew(env, "sweep", Best, matmul.Shape{M: n, N: n, K: n}, dtype, uint64(100+n))
				if err != nil {
					return nil, err
				}
				rec.Variant, rec.Size = sweepName(Best.Name, dtype), int64(n)
				run.Add(rec)
				prog.Step(fmt.Sprintf("sweep %s n=%d", dtype, n))
			}
		}
	}
	if err := addLesson03(env, run); err != nil {
		return nil, err
	}
	if err := addAccurate(env, run, len(refused) == 0); err != nil {
		return nil, err
	}
	prog.Step("float32: the split, cuBLAS fp32 and TF32, lesson 03's split")
	if err := addConv(env, run, len(refused) == 0, conv.CheckCount(quick)); err != nil {
		return nil, err
	}
	prog.Step("the deep convolution: steps 7 and 8, cuDNN, lesson 05's steps")
	for _, c := range StepChecks(env.Device()) {
		if c2, ok := refused[c.Step]; ok {
			run.Add(lab.RefusedRecord(c2))
		}
	}
	return run, nil
}

// measureNew draws a 16-bit problem of shape s in dtype from seed, measures st on it under
// caseName, and frees it.
func measureNew(env *lab.Env, caseName string, st Step, s matmul.Shape, dtype string, seed uint64) (record.Record, error) {
	p, err := NewProblem(env, s, dtype, seed)
	if err != nil {
		return record.Record{}, err
	}
	defer p.Free()
	return p.Measure(caseName, st, "")
}

// addLesson03 measures lesson 03's fastest 16-bit product at 4096^3 (where the GPU runs it).
func addLesson03(env *lab.Env, run *record.Run) error {
	if matmul.Refusal(matmul.HiOnly, env.Device()) != nil {
		return nil
	}
	p, err := matmul.NewCheckedProblem(env, Article, Seed)
	if err != nil {
		return err
	}
	defer p.Free()
	rec, err := p.Measure(FP16, matmul.HiOnly, "")
	if err != nil {
		return fmt.Errorf("lesson 03's fp16 step: %w", err)
	}
	rec.Variant, rec.Kind = Lesson03, "baseline"
	rec.Note += "; float32 A and B split to fp16 halves first (timed), C in float32"
	run.Add(rec)
	return nil
}

// addTorch measures cuBLAS at every shape. When PyTorch is unavailable the records say why.
func addTorch(env *lab.Env, run *record.Run, shapes []matmul.Shape) {
	tt, err := RunTorch(shapes, env.Bench.Method)
	if err != nil {
		for _, v := range Vendor {
			run.Add(record.Record{Case: v.DType, Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: Article.String(), Note: err.Error()})
		}
		return
	}
	run.Receipt.Torch = tt.Torch
	for _, s := range shapes {
		for _, v := range Vendor {
			t, ok := tt.Times[s.String()][v.Key]
			if !ok {
				continue
			}
			rec := record.Record{Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: s.String(), Size: int64(s.M), Correct: true,
				Note: "torch " + tt.Torch + ", inputs torch.rand*2-1"}
			w := bench.Work{FLOPs: s.FLOPs(), Bytes: float64(DeviceBytes(s))}
			timing := t.Bench()
			if s == Article {
				rec.Case = v.DType
				run.Add(env.WithTiming(rec, w, timing))
			}
			if s != Article || slices.Contains(SweepSizes(false), s.M) {
				r2 := rec
				switch {
				case s.M == s.N && s.N == s.K:
					r2.Case, r2.Variant = "sweep", sweepName("cuBLAS", v.DType)
				case v.DType == FP16:
					r2.Case = "shapes"
				default:
					continue
				}
				run.Add(env.WithTiming(r2, w, timing))
			}
		}
	}
}

// Float32 is the case of the float32-accurate products: the split step, cuBLAS in float32 and TF32
// with their errors on the same inputs, and lesson 03's split.
const Float32 = "float32"

// Lesson03Split is lesson 03's float32-accurate step, measured beside the split on wgmma.
const Lesson03Split = "9 fp16x3 split"

// Awkward is the case of lesson 03's awkward float32 shapes (matmul.Awkward), which Multiply runs
// with the split on Hopper, beside cuBLAS fp32.
const Awkward = "awkward"

// addAccurate measures the float32 case at 4096^3: cuBLAS fp32 and TF32 through lesson 03's PyTorch
// script (timed, and their errors on the same inputs against float64), the float32-in steps (where
// the GPU runs them: hopper is false elsewhere) and lesson 03's split; and the split beside cuBLAS
// fp32 on lesson 03's awkward shapes.
func addAccurate(env *lab.Env, run *record.Run, hopper bool) error {
	p, err := NewAccurateProblem(env, Article, Seed)
	if err != nil {
		return err
	}
	defer p.Free()
	tr, terr := matmul.RunTorch(append([]matmul.Shape{Article}, matmul.Awkward...), p.Problem, env.Bench.Method)
	if terr == nil {
		for _, s := range matmul.Awkward {
			rec := record.Record{Case: Awkward, Variant: matmul.TorchFP32, Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.M),
				Correct: true, Note: "torch " + tr.Torch + ", inputs torch.rand*2-1"}
			run.Add(env.WithTiming(rec, s.Work(), tr.Times[s.String()]["fp32"].Bench()))
		}
	}
	for i, s := range matmul.Awkward {
		if !hopper {
			break
		}
		ap, err := NewAccurateProblem(env, s, uint64(140+i))
		if err != nil {
			return err
		}
		rec, err := ap.Measure(Awkward, Split, "")
		if err == nil && !(Multiplier{SplitMinMACs}).UsesSplit(s, env.Device()) {
			run.Add(rec) // the split, timed, though Multiply runs lesson 03's pick here
			st := matmul.Pick(s, env.Device(), true, true)
			rec, err = ap.Problem.Measure(Awkward, st, "")
			rec.Variant, rec.Kind = Lesson03Prefix+st.Name, "baseline"
		}
		ap.Free()
		if err != nil {
			return err
		}
		rec.Note += "; what Multiply runs on this shape"
		run.Add(rec)
	}
	for _, v := range matmul.TorchVariants {
		if v.Key == "fp16" {
			continue
		}
		rec := record.Record{Case: Float32, Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: Article.String(), Size: int64(Article.M)}
		if terr != nil {
			rec.Note = terr.Error()
			run.Add(rec)
			continue
		}
		run.Receipt.Torch = tr.Torch
		rec.Correct, rec.Note = true, "torch "+tr.Torch+", inputs torch.rand*2-1"
		if c, ok := tr.Cross[v.Key]; ok {
			rec.RelL2, rec.MaxAbs, rec.Correct, rec.Tol = c.RelL2, c.MaxAbs, c.OK, c.Tol.Name
			rec.Note += "; its error on the lesson's inputs against float64, " + p.Sample.What
		}
		run.Add(env.WithTiming(rec, Article.Work(), tr.Times[Article.String()][v.Key].Bench()))
	}
	for _, st := range Accurate {
		if !hopper {
			break
		}
		rec, err := p.Measure(Float32, st, "")
		if err != nil {
			return err
		}
		run.Add(rec)
		if rep, err := p.Report(st); err == nil {
			run.Kernels = append(run.Kernels, rep)
		}
	}
	st, err := matmul.StepByName(Lesson03Split)
	if err != nil || matmul.Refusal(st, env.Device()) != nil {
		return err
	}
	rec, err := p.Problem.Measure(Float32, st, "")
	if err != nil {
		return fmt.Errorf("lesson 03's split: %w", err)
	}
	rec.Variant, rec.Kind = "lesson 03: "+st.Name+" (mma.sync)", "baseline"
	run.Add(rec)
	return nil
}

// Lesson05Steps are lesson 05's fastest steps at the deep layer, measured beside steps 7 and 8.
var Lesson05Steps = []string{"5 cp.async TF32", "5 cp.async FP16"}

// Lesson05Prefix starts the record names of lesson 05's steps in this lesson's run.
const Lesson05Prefix = "lesson 05: "

// addConv measures lesson 05's deep layer (conv.Deep, checked outputs of it against float64):
// cuDNN in every ConvVendor form on the same inputs, lesson 05's fastest steps where the GPU runs
// them, and steps 7 and 8 where it is a Hopper (hopper true), with their compile reports.
func addConv(env *lab.Env, run *record.Run, hopper bool, checked int) error {
	p, err := NewConvProblem(env, conv.Deep, Seed, checked)
	if err != nil {
		return err
	}
	defer p.Free()
	addConvVendor(env, run, p)
	for _, name := range Lesson05Steps {
		st := conv.MustStep(name)
		rec, err := p.Problem.Measure(st, "", ConvCase, Lesson05Prefix+name)
		if errors.Is(err, gpu.ErrUnsupported) {
			continue // lesson 05's own run records the refusal
		}
		if err != nil {
			return fmt.Errorf("lesson 05's %s: %w", name, err)
		}
		rec.Kind = "baseline"
		run.Add(rec)
	}
	for _, st := range AllConvs() {
		if !hopper {
			break
		}
		recs, err := p.Measure(ConvCase, st, "")
		if err != nil {
			return err
		}
		for _, rec := range recs {
			run.Add(rec)
		}
		if rep, err := p.ReportConv(st); err == nil {
			run.Kernels = append(run.Kernels, rep)
		}
	}
	return nil
}

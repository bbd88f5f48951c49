package giou

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/dtype"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
)

// Kind is what a step computes: the loss, or the loss and its gradient for the predicted boxes.
type Kind string

// The kinds of step.
const (
	KindForward Kind = "forward"
	KindTrain   Kind = "forward+backward"
)

// DType is the storage type of the boxes (the arithmetic and the loss are always float32).
type DType = dtype.DType

// The lesson's storage types.
const (
	F32  = dtype.F32
	F16  = dtype.F16
	BF16 = dtype.BF16
)

// Kernel is one launch of a step: the file, the kernel and its configuration.
type Kernel struct {
	File, Name string
	Config     gpu.Config
}

// Launch is how a step runs on a batch: its kernels in order (the article's steps take two, the
// per-slot kernel and the second pass), and why a general kernel was picked, when it was.
type Launch struct {
	Kernels []Kernel
	Note    string
}

// String names the kernels and their launches.
func (l Launch) String() string {
	s := ""
	for i, k := range l.Kernels {
		if i > 0 {
			s += " + "
		}
		s += fmt.Sprintf("%s grid %v x block %v", k.Name, k.Config.Grid, k.Config.Block)
	}
	if l.Note != "" {
		s += "; " + l.Note
	}
	return s
}

// Step is one rung of the lesson: its file and main kernel, what it computes, its tolerance, and a
// Plan that picks its kernels for a batch shape or refuses it (with the limit named) before any launch.
type Step struct {
	Name   string
	File   string
	Kernel string // the main kernel: the one a reader's edited source must define
	Kind   Kind
	DType  DType
	Idea   string
	// Plan returns the launch for shape s; aligned says whether pred, target (and dpred) start on a
	// 16-byte boundary (8 bytes for the 16-bit steps).
	Plan func(s Shape, aligned bool) (Launch, error)
}

// MeanBlock is the block of the one-block-per-image kernels: two warps. Most images of the article's
// workload hold a handful of boxes; an image with more boxes than threads loops.
const MeanBlock = 64

// MaxGrid caps the grid of the one-block-per-image kernels: up to MaxGrid images each block takes
// one image, past it each takes every MaxGrid-th (the last-block ticket counter serialises one
// atomic per block). 4096 blocks of 64 threads fill 128 SMs at 32 blocks each.
const MaxGrid = 4096

// Grid is the number of blocks of the one-block-per-image kernels for B images.
func Grid(b int) int { return max(1, min(b, MaxGrid)) }

// ReduceBlock is the article's second pass: one block.
const ReduceBlock = 1024

// MaxArticleM is the most box slots the article's launch takes: one thread per slot, block = M.
const MaxArticleM = 1024

// Tolerances: the loss is a mean of float32 terms (a few thousand at the article's shape), each a
// handful of roundings; the gradient is compared per box (times the box count, so the values are
// O(1/width)): each element is a few dozen float32 operations.
var (
	LossTol = check.FP32
	GradTol = check.FP32
)

func article(kernel string) func(s Shape, _ bool) (Launch, error) {
	file := "1_article.cu"
	if kernel == "giou_article_skip" {
		file = "2_skip.cu"
	}
	return func(s Shape, _ bool) (Launch, error) {
		if s.M > MaxArticleM {
			return Launch{}, fmt.Errorf("giou %s: M = %d box slots is over the article launch's limit of %d (one thread per slot, block = M)", kernel, s.M, MaxArticleM)
		}
		return Launch{Kernels: []Kernel{
			{File: file, Name: kernel, Config: gpu.Config{Grid: gpu.D1(max(1, s.B)), Block: gpu.D1(max(1, s.M))}},
			{File: "1_article.cu", Name: "giou_article_reduce", Config: gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(ReduceBlock)}},
		}}, nil
	}
}

func perImage(file, kernel string, aligned bool, what string) (Launch, error) {
	l := Launch{}
	if !aligned {
		kernel += "_any"
		l.Note = fmt.Sprintf("the boxes are not %s-aligned: the scalar-load kernel", what)
	}
	l.Kernels = []Kernel{{File: file, Name: kernel, Config: gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(MeanBlock)}}}
	return l, nil
}

func withGrid(l Launch, s Shape) Launch {
	for i := range l.Kernels {
		l.Kernels[i].Config.Grid = gpu.D1(Grid(s.B))
	}
	return l
}

// Steps are the lesson's steps, in order.
var Steps = []Step{
	{Name: "1 article", File: "1_article.cu", Kernel: "giou_article", Kind: KindForward, DType: F32,
		Idea: "the article's fused kernel: one thread per padded slot, invalid -> 0, then a second pass (one block) for the mean",
		Plan: article("giou_article")},
	{Name: "2 article skip", File: "2_skip.cu", Kernel: "giou_article_skip", Kind: KindForward, DType: F32,
		Idea: "the article's conditional skip: padded slots skip the pred load and the arithmetic",
		Plan: article("giou_article_skip")},
	{Name: "3 block mean", File: "3_block_mean.cu", Kernel: "giou_mean_f32", Kind: KindForward, DType: F32,
		Idea: "one block per image reads only its valid boxes, block sum, last-block mean: one kernel, deterministic",
		Plan: func(s Shape, aligned bool) (Launch, error) {
			l, err := perImage("3_block_mean.cu", "giou_mean_f32", aligned, "16-byte")
			return withGrid(l, s), err
		}},
	halfStep("4 half", F16, "giou_mean_f16"),
	halfStep("4 bfloat16", BF16, "giou_mean_bf16"),
	{Name: "5 fused fwd+bwd", File: "5_fused.cu", Kernel: "giou_train_f32", Kind: KindTrain, DType: F32,
		Idea: "loss and dL/dpred in one pass: every intermediate in registers, padded slots' gradient zeroed",
		Plan: func(s Shape, aligned bool) (Launch, error) {
			l, err := perImage("5_fused.cu", "giou_train_f32", aligned, "16-byte")
			return withGrid(l, s), err
		}},
	warpStep("6 warp per image", KindForward, "giou_warp_f32",
		"one warp per image, eight images per block: one last-block ticket per eight images"),
	warpStep("6 warp fwd+bwd", KindTrain, "giou_warp_train_f32",
		"step 5's loss and gradient with one warp per image: one ticket per eight images"),
}

// WarpBlock is step 6's block: eight warps, eight images.
const WarpBlock = 256

func warpStep(name string, kind Kind, kernel, idea string) Step {
	return Step{Name: name, File: "6_warp.cu", Kernel: kernel, Kind: kind, DType: F32, Idea: idea,
		Plan: func(s Shape, aligned bool) (Launch, error) {
			l, err := perImage("6_warp.cu", kernel, aligned, "16-byte")
			l.Kernels[0].Config = gpu.Config{Grid: gpu.D1(max(1, min(gpu.CeilDiv(s.B, WarpBlock/32), MaxGrid))), Block: gpu.D1(WarpBlock)}
			return l, err
		}}
}

func halfStep(name string, dt DType, kernel string) Step {
	return Step{Name: name, File: "4_half.cu", Kernel: kernel, Kind: KindForward, DType: dt,
		Idea: fmt.Sprintf("%s boxes read as they are (8 bytes per box), no cast pass; float math", dt),
		Plan: func(s Shape, aligned bool) (Launch, error) {
			l, err := perImage("4_half.cu", kernel, aligned, "8-byte")
			return withGrid(l, s), err
		}}
}

// StepByName finds a step by its name or its number ("3"; "4" is the half step).
func StepByName(name string) (Step, error) {
	return lab.StepNamed("giou", Steps, func(st Step) string { return st.Name }, name)
}

func mustStep(name string) Step {
	st, err := StepByName(name)
	if err != nil {
		panic(err)
	}
	return st
}

// PlanFor validates the shape and returns the step's launch for it.
func (st Step) PlanFor(s Shape, aligned bool) (Launch, error) {
	if err := s.Validate(); err != nil {
		return Launch{}, err
	}
	return st.Plan(s, aligned)
}

// source is a kernel's CUDA source: code in place of the step's own file when code is not empty and
// the kernel comes from that file (a reader's edit of the step), the embedded file otherwise.
func (st Step) source(k Kernel, code string) (compile.Source, error) {
	if code != "" && k.File == st.File {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return kg.Source(k.File)
}

// StepChecks checks every step on d at the article's workload (ArticleShape, aligned buffers): the
// need its source declares, then its plan. No step of the lesson needs more than compute
// capability 7.5 (the 16-bit steps keep bfloat16 as storage and compute in float32).
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, st := range Steps {
		out = append(out, lab.CheckStep(kg.Kernels, st.Name, st.File, nil, d, func() error {
			_, err := st.PlanFor(ArticleShape, true)
			return err
		}))
	}
	return out
}

// RefusedOn are the steps d cannot run (Lesson.RefusedOn without the initialisation cycle Run ->
// Lesson -> Run).
func RefusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

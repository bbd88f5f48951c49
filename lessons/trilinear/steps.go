package trilinear

import (
	"fmt"
	"math/bits"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/dtype"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// Kind is what a step computes; every step of a kind takes the same kernel arguments:
//
//	forward:          (feats, points, out, N, F)
//	backward feats:   (g, points, dfeats, N, F)
//	backward points:  (feats, points, g, dpoints, N, F)
//	train:            (feats, points, target, dfeats, dpoints, loss, N, F)
type Kind string

// The kinds of step.
const (
	KindForward   Kind = "forward"
	KindBwdFeats  Kind = "backward feats"
	KindBwdPoints Kind = "backward points"
	KindTrain     Kind = "train"
)

// DType is the storage type of feats and out (the points and the arithmetic are always float32).
type DType = dtype.DType

// The lesson's storage types.
const (
	F32  = dtype.F32
	F16  = dtype.F16
	BF16 = dtype.BF16
)

// Block is the threads per block of every kernel of the lesson.
const Block = 256

// Waves bounds the grid of the grid-stride (flat) kernels: this many waves of resident blocks.
const Waves = 8

// Launch is how a step runs on a shape: the file and kernel picked (a step falls back to a general
// kernel when its fast one cannot take the shape), the launch configuration, and why.
type Launch struct {
	File, Kernel string
	Config       gpu.Config
	Note         string
}

// Step is one rung of the lesson: its file and main kernel, what it computes, its tolerance, and a
// Plan that picks the kernel for a shape or refuses it (with the limit named) before any launch.
type Step struct {
	Name   string
	File   string
	Kernel string // the main kernel: the one a reader's edited source must define
	Kind   Kind
	DType  DType
	Tol    check.Tolerance
	Idea   string
	// Plan returns the launch for shape s on device d; aligned says whether every buffer the step
	// reads and writes with vector loads starts on a 16-byte boundary.
	Plan func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error)
}

// MaxArticleF is the largest F the article's launch takes: grid.y = ceil(F/16) <= 65535.
const MaxArticleF = 65535 * 16

func flat(file, kernel string, s Shape, d gpu.DeviceInfo, note string) Launch {
	return Launch{File: file, Kernel: kernel, Note: note,
		Config: gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, max(1, s.N*s.F), Block, Waves)), Block: gpu.D1(Block)}}
}

// VecBlock is the 2-D block of the vector steps for rows of `vecs` vectors: TX threads along a row
// (a power of two from 8 to 256) and TY = 256/TX points.
func VecBlock(vecs int) (tx, ty int) {
	tx = 8
	if vecs > 8 {
		tx = 1 << bits.Len(uint(vecs-1))
	}
	tx = min(tx, Block)
	return tx, Block / tx
}

func vec(file, kernel string, s Shape, vecs int) Launch {
	tx, ty := VecBlock(vecs)
	return Launch{File: file, Kernel: kernel, Config: gpu.Config{Grid: gpu.D1(gpu.CeilDiv(s.N, ty)), Block: gpu.D2(tx, ty)}}
}

func warpPerPoint(file, kernel string, s Shape) Launch {
	return Launch{File: file, Kernel: kernel, Config: gpu.Config{Grid: gpu.D1(gpu.CeilDiv(s.N, Block/32)), Block: gpu.D1(Block)}}
}

// fallbackNote says why a vector kernel was not used.
func fallbackNote(s Shape, mult int, aligned bool) string {
	if s.F%mult != 0 {
		return fmt.Sprintf("F = %d is not a multiple of %d: the general kernel", s.F, mult)
	}
	if !aligned {
		return "a buffer is not 16-byte aligned: the general kernel"
	}
	return ""
}

// Steps are the lesson's steps, in order.
var Steps = []Step{
	{Name: "1 article", File: "1_article.cu", Kernel: "tri_fw_article", Kind: KindForward, DType: F32, Tol: ForwardTol,
		Idea: "the article's kernel as written: block (16,16), thread x over the points (uncoalesced)",
		Plan: func(s Shape, d gpu.DeviceInfo, _ bool) (Launch, error) {
			if s.F > MaxArticleF {
				return Launch{}, fmt.Errorf("trilinear 1 article: F = %d is over the article launch's limit of %d (grid.y = ceil(F/16) <= 65535)", s.F, MaxArticleF)
			}
			return Launch{File: "1_article.cu", Kernel: "tri_fw_article",
				Config: gpu.Config{Grid: gpu.D2(max(1, gpu.CeilDiv(s.N, 16)), max(1, gpu.CeilDiv(s.F, 16))), Block: gpu.D2(16, 16)}}, nil
		}},
	{Name: "2 coalesced", File: "2_coalesced.cu", Kernel: "tri_fw_coalesced", Kind: KindForward, DType: F32, Tol: ForwardTol,
		Idea: "consecutive threads on consecutive features (flat index n*F+f), clamped points, any N and F",
		Plan: func(s Shape, d gpu.DeviceInfo, _ bool) (Launch, error) {
			return flat("2_coalesced.cu", "tri_fw_coalesced", s, d, ""), nil
		}},
	{Name: "3 float4", File: "3_float4.cu", Kernel: "tri_fw_float4", Kind: KindForward, DType: F32, Tol: ForwardTol,
		Idea: "16-byte loads and stores, weights computed once per point in shared memory, streaming cache hints",
		Plan: func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
			if note := fallbackNote(s, 4, aligned); note != "" {
				return flat("2_coalesced.cu", "tri_fw_coalesced", s, d, note), nil
			}
			return vec("3_float4.cu", "tri_fw_float4", s, s.F/4), nil
		}},
	halfStep("4 half", F16, check.FP16, "tri_fw_f16"),
	halfStep("4 bfloat16", BF16, check.BF16, "tri_fw_bf16"),
	{Name: "5 backward feats", File: "5_backward_feats.cu", Kernel: "tri_bw_feats_float4", Kind: KindBwdFeats, DType: F32, Tol: FeatsTol,
		Idea: "dfeats = W_k * g: each point owns its 8 rows, no atomics; float4 reads of g, 8 float4 writes",
		Plan: func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
			if note := fallbackNote(s, 4, aligned); note != "" {
				return flat("5_backward_feats.cu", "tri_bw_feats_any", s, d, note), nil
			}
			return vec("5_backward_feats.cu", "tri_bw_feats_float4", s, s.F/4), nil
		}},
	{Name: "6 backward points", File: "6_backward_points.cu", Kernel: "tri_bw_points_float4", Kind: KindBwdPoints, DType: F32, Tol: PointsTol,
		Idea: "beyond the article: dpoints, a reduction over F per point, one warp per point with shuffles",
		Plan: func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
			if note := fallbackNote(s, 4, aligned); note != "" {
				l := warpPerPoint("6_backward_points.cu", "tri_bw_points", s)
				l.Note = note
				return l, nil
			}
			return warpPerPoint("6_backward_points.cu", "tri_bw_points_float4", s), nil
		}},
	{Name: "7 fused train step", File: "7_fused.cu", Kernel: "tri_train_fused_float4", Kind: KindTrain, DType: F32, Tol: check.FP32,
		Idea: "forward, MSE loss gradient, dfeats and dpoints in one pass: feats read once",
		Plan: func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
			if note := fallbackNote(s, 4, aligned); note != "" {
				l := warpPerPoint("7_fused.cu", "tri_train_fused", s)
				l.Note = note
				return l, nil
			}
			return warpPerPoint("7_fused.cu", "tri_train_fused_float4", s), nil
		}},
}

func halfStep(name string, dt DType, tol check.Tolerance, kernel string) Step {
	return Step{Name: name, File: "4_half.cu", Kernel: kernel, Kind: KindForward, DType: dt, Tol: tol,
		Idea: fmt.Sprintf("%s feats and out, float math: half the bytes; 8 features per 16-byte load", dt),
		Plan: func(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
			if note := fallbackNote(s, 8, aligned); note != "" {
				return flat("4_half.cu", kernel+"_any", s, d, note), nil
			}
			return vec("4_half.cu", kernel, s, s.F/8), nil
		}}
}

// StepByName finds a step by its name or its number ("3").
func StepByName(name string) (Step, error) {
	return lab.StepNamed("trilinear", Steps, func(st Step) string { return st.Name }, name)
}

// PlanFor validates the shape and returns the step's launch for it.
func (st Step) PlanFor(s Shape, d gpu.DeviceInfo, aligned bool) (Launch, error) {
	if err := s.Validate(); err != nil {
		return Launch{}, err
	}
	return st.Plan(s, d, aligned)
}

// source is a launch's CUDA source: code in place of the step's own file when code is not empty and
// the launch uses that file (a reader's edit of the step), the embedded file otherwise.
func (st Step) source(l Launch, code string) (compile.Source, error) {
	if code != "" && l.File == st.File {
		return compile.Source{Name: "my_" + st.File, Code: code}, nil
	}
	return kt.Source(l.File)
}

// StepChecks checks every step on d at the article's shape (aligned buffers): the need its source
// declares, then its plan. No step of the lesson needs more than compute capability 7.5 (the
// bfloat16 step keeps it as storage and computes in float32).
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, st := range Steps {
		out = append(out, lab.CheckStep(kt.Kernels, st.Name, st.File, nil, d, func() error {
			_, err := st.PlanFor(ArticleShape, d, true)
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

//go:build !nocuda

package giou

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
)

// TestSanitize is the package's part of the compute-sanitizer pass (cmd/sanitize runs only this test,
// under memcheck, racecheck and synccheck): every kernel of kernels/giou, each checked against the
// float64 reference on NaN-poisoned outputs, on small awkward batches that keep every launch to a
// few dozen blocks.
//
//   - Every step (1_article to 6_warp: the article's kernel and its second pass, the skip, the block
//     mean, half and bfloat16, the fused forward and backward, the warp kernels) on sanitizeBatch with
//     aligned buffers (the vector kernels) and buffers one element off (the _any kernels).
//   - The GPU op: loss only (giou_warp_f32, aligned and misaligned pred), forward and backward
//     (giou_warp_train_f32, aligned and misaligned) on the same batch, and a gradient check on a
//     small batch, whose squared loss makes Backward scale the gradient (giou_scale_grad).
//   - Each exercise's solution (it must pass) and untouched starter (it must fail) on the exercise
//     batches only, none timed at the article's workload.
//
// sanitizeBatch has 19 images of 67 slots, an odd number (1273): more than one block or warp tile
// of images for the last-block mean, an image past the 64-thread block and two warps, an article block
// of 67 threads (not a multiple of 32), many padded slots and some empty images. Batches past MaxGrid
// images (the grid-stride over images) would take 4096 blocks and are left to the other tests.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	bt := sanitizeBatch()
	checkSteps(t, env, bt)

	for _, off := range []int{0, 1} {
		if res, err := opLossCheck(env, bt, off); err != nil {
			t.Errorf("op loss, offset %d: %v", off, err)
		} else if !res.OK() {
			t.Errorf("op loss, offset %d: %v", off, res)
		}
		r, err := OpCheck(env, bt, off)
		if err != nil {
			t.Errorf("op forward and backward, offset %d: %v", off, err)
		} else if !r.OK() {
			t.Errorf("op forward and backward, offset %d: %v", off, r)
		}
	}
	s := GradCheckShapes[0]
	if res, err := GradCheckGPU(env, s, 60); err != nil {
		t.Errorf("gradcheck %v: %v", s, err)
	} else if !res.OK {
		t.Errorf("gradcheck %v: %v: %v", s, res, res.Err())
	}

	checkExercises(t, env, false)
	labtest.LaunchedEvery(t, kg.Kernels, env)
}

// sanitizeBatch is Generate's batch of 19 images of 67 slots with image 0 full (67 boxes) and image
// 1 holding 33 (one past a warp): the boxes added are their slots' predictions moved by (1, 2).
func sanitizeBatch() *Batch {
	bt := Generate(Shape{B: 19, M: 67}, 31)
	for b, n := range []int{67, 33} {
		for j := int(bt.Counts[b]); j < n; j++ {
			o := (b*bt.M + j) * 4
			for k := range 4 {
				bt.Target[o+k] = bt.Pred[o+k] + float32(1+k%2)
			}
		}
		bt.Counts[b] = int32(max(n, int(bt.Counts[b])))
	}
	return bt
}

// opLossCheck runs the GPU op on bt's pred, a device view offset floats into its buffer that needs
// no gradient (so the op launches OpForward, the loss only), and compares the loss with the float64
// reference.
func opLossCheck(env *lab.Env, bt *Batch, offset int) (Outcome, error) {
	var o Outcome
	op, err := NewGPUOp(env, bt)
	if err != nil {
		return o, err
	}
	defer op.Close()
	whole, err := gpu.Alloc[float32](env.Session, 4*bt.Slots()+offset)
	if err != nil {
		return o, err
	}
	defer whole.Free()
	view, err := whole.View(offset, 4*bt.Slots())
	if err != nil {
		return o, err
	}
	if err := view.CopyFromHost(bt.Pred); err != nil {
		return o, err
	}
	tp := autograd.NewTape()
	defer tp.Free()
	loss, err := tp.Apply(op, autograd.OnDevice("pred", view, false, bt.B, bt.M, 4))
	if err != nil {
		return o, err
	}
	defer loss.Free()
	lv, err := loss.Values()
	if err != nil {
		return o, err
	}
	pred, target := bt.Inputs(F32)
	o.Got, o.Want = lv[0], Loss(bt.Shape, pred, target, bt.Counts, nil)
	o.Loss = compareLoss(o.Got, o.Want)
	return o, nil
}

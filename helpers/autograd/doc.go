// Package autograd is a small reverse-mode automatic differentiation kit, the Go counterpart of
// torch.autograd.Function and torch.autograd.gradcheck, sized for checking hand-written GPU
// backward kernels.
//
// A Function has a Forward that computes one output from its inputs and saves what it needs in a
// Context, and a Backward that turns the output's gradient into the inputs' gradients. A Tape
// records each application (Tape.Apply) and Tape.Backward walks them in reverse, accumulating the
// gradient of a tensor that is used more than once. Tensors hold host float64 values, a GPU
// float32 buffer, or both, each made on demand, so a Function may run a CUDA kernel on the device
// copy while the loss around it is computed on the host.
//
// GradCheck proves a Backward: it compares the tape's gradient with central finite differences
// of the loss, element by element, under a stated tolerance (Float64Check, Float32Check).
//
//	x := autograd.Param("x", []float64{0.5, -1, 2})
//	tp := autograd.NewTape()
//	sq, _ := tp.Apply(autograd.Mul, x, x)    // x*x, x used twice
//	th, _ := tp.Apply(autograd.Tanh, x)
//	d, _ := tp.Apply(autograd.Sub, sq, th)
//	loss, _ := tp.Apply(autograd.Sum, d)     // sum(x*x - tanh(x))
//	_ = tp.Backward(loss)
//	g, _ := x.Grad.Values()                  // 2x - (1 - tanh(x)^2)
//
//	res, _ := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
//		return autograd.Chain(tp, in[0], autograd.Square, autograd.Sum)
//	}, []*autograd.Tensor{x}, autograd.Float64Check)
//	fmt.Println(res)                          // PASS  gradcheck of 3 elements: ...
//
// A GPU operation is a Function whose Forward launches a kernel on in[i].Device(session) and returns
// OnDevice(...) with its output buffer, and whose Backward launches the gradient kernels (see
// lessons/rwkv's GPUOp). The tape's default Accumulate adds on the host.
package autograd

package autograd

import (
	"errors"
	"fmt"
)

// Function is one differentiable operation with a single output, the counterpart of
// torch.autograd.Function: Forward computes the output from the inputs and saves in ctx what
// Backward will need; Backward turns the gradient of the output into one gradient per input (nil
// for an input that needs none: ctx.NeedsGrad says which do).
//
// Forward must not modify its inputs. The gradients Backward returns must have the shape of the
// matching inputs; they may live on the host or on the GPU.
type Function interface {
	Name() string
	Forward(ctx *Context, inputs ...*Tensor) (*Tensor, error)
	Backward(ctx *Context, gradOut *Tensor) ([]*Tensor, error)
}

// Context carries what Forward saves for Backward: tensors (SaveForBackward) and any other values
// (Set), and says which inputs need a gradient.
type Context struct {
	saved []*Tensor
	vals  map[string]any
	needs []bool
}

// SaveForBackward keeps tensors for Backward, in order.
func (c *Context) SaveForBackward(ts ...*Tensor) { c.saved = append(c.saved, ts...) }

// Saved returns the tensors Forward saved, in order.
func (c *Context) Saved() []*Tensor { return c.saved }

// Set keeps a non-tensor value (a shape, a constant, a compiled kernel) for Backward.
func (c *Context) Set(key string, v any) {
	if c.vals == nil {
		c.vals = map[string]any{}
	}
	c.vals[key] = v
}

// Get returns a value kept with Set.
func (c *Context) Get(key string) (any, bool) {
	v, ok := c.vals[key]
	return v, ok
}

// NeedsGrad reports whether input i needs a gradient (torch's ctx.needs_input_grad). Outside a
// tape every input counts as needing one.
func (c *Context) NeedsGrad(i int) bool {
	if c.needs == nil || i >= len(c.needs) {
		return true
	}
	return c.needs[i]
}

// node is one recorded application.
type node struct {
	fn     Function
	ctx    *Context
	inputs []*Tensor
	output *Tensor
}

// Tape records Function applications in order; Backward walks them in reverse, calling each
// Function's Backward and accumulating the gradients of tensors used more than once. A tape is
// used for one forward and one backward pass (like a PyTorch graph without retain_graph).
type Tape struct {
	nodes []node
	// Accumulate adds two gradients of the same tensor. The default adds host values (downloading
	// GPU gradients first); a GPU program can set a device add instead.
	Accumulate func(a, b *Tensor) (*Tensor, error)
	done       bool
}

// NewTape returns an empty tape.
func NewTape() *Tape { return &Tape{} }

// Apply runs fn's Forward on the inputs and, when any input requires a gradient, records the
// application so that Backward reaches it. The output requires a gradient exactly when an input does.
func (tp *Tape) Apply(fn Function, inputs ...*Tensor) (*Tensor, error) {
	ctx := &Context{needs: make([]bool, len(inputs))}
	any := false
	for i, in := range inputs {
		if in == nil {
			return nil, fmt.Errorf("%s: input %d is nil", fn.Name(), i)
		}
		ctx.needs[i] = in.RequiresGrad
		any = any || in.RequiresGrad
	}
	out, err := fn.Forward(ctx, inputs...)
	if err != nil {
		return nil, fmt.Errorf("%s forward: %w", fn.Name(), err)
	}
	if out == nil {
		return nil, fmt.Errorf("%s forward returned no output", fn.Name())
	}
	if any && tp != nil {
		out.RequiresGrad = true
		tp.nodes = append(tp.nodes, node{fn: fn, ctx: ctx, inputs: inputs, output: out})
	}
	return out, nil
}

// Len is the number of recorded applications.
func (tp *Tape) Len() int { return len(tp.nodes) }

// Backward computes the gradient of loss, a scalar, with respect to every tensor on the tape that
// requires one, and stores it in each tensor's Grad. Gradients of leaves set earlier are
// overwritten (each Backward starts from zero, unlike PyTorch's accumulation across calls).
func (tp *Tape) Backward(loss *Tensor) error {
	if loss.Len() != 1 {
		return fmt.Errorf("backward from %s: the loss must be a scalar, it has %d elements (use BackwardWith for a seed gradient)", loss, loss.Len())
	}
	return tp.BackwardWith(loss, Scalar("dloss", 1))
}

// BackwardWith is Backward from any output with the given seed gradient dL/dout.
func (tp *Tape) BackwardWith(out, seed *Tensor) error {
	if tp.done {
		return errors.New("backward: this tape was already used for a backward pass; record a new one")
	}
	if !out.RequiresGrad {
		return fmt.Errorf("backward from %s: it does not depend on any tensor that requires a gradient", out)
	}
	if seed.Len() != out.Len() {
		return fmt.Errorf("backward from %s: the seed gradient has %d elements, want %d", out, seed.Len(), out.Len())
	}
	tp.done = true
	acc := tp.Accumulate
	if acc == nil {
		acc = AddHost
	}
	grads := map[*Tensor]*Tensor{out: seed}
	for _, n := range tp.nodes {
		for _, in := range n.inputs {
			if in.RequiresGrad {
				in.Grad = nil
			}
		}
	}
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := tp.nodes[i]
		g, ok := grads[n.output]
		if !ok {
			continue // the loss does not depend on this output
		}
		gin, err := n.fn.Backward(n.ctx, g)
		if err != nil {
			return fmt.Errorf("%s backward: %w", n.fn.Name(), err)
		}
		if len(gin) != len(n.inputs) {
			return fmt.Errorf("%s backward returned %d gradients for %d inputs", n.fn.Name(), len(gin), len(n.inputs))
		}
		for j, in := range n.inputs {
			if !in.RequiresGrad || gin[j] == nil {
				continue
			}
			if gin[j].Len() != in.Len() {
				return fmt.Errorf("%s backward: the gradient of input %d (%s) has %d elements, want %d", n.fn.Name(), j, in, gin[j].Len(), in.Len())
			}
			if prev, ok := grads[in]; ok {
				sum, err := acc(prev, gin[j])
				if err != nil {
					return fmt.Errorf("accumulating the gradient of %s: %w", in, err)
				}
				// The summands were the tape's own intermediate gradients: release their device
				// buffers (their host values, if any, stay).
				if sum != prev {
					prev.Free()
				}
				if sum != gin[j] {
					gin[j].Free()
				}
				grads[in] = sum
			} else {
				grads[in] = gin[j]
			}
		}
	}
	for t, g := range grads {
		if t != out {
			g.Shape = t.Shape
			t.Grad = g
		}
	}
	out.Grad = seed
	return nil
}

// AddHost adds two tensors of the same length on the host (downloading GPU values first) into a
// new host tensor.
func AddHost(a, b *Tensor) (*Tensor, error) {
	av, err := a.Values()
	if err != nil {
		return nil, err
	}
	bv, err := b.Values()
	if err != nil {
		return nil, err
	}
	if len(av) != len(bv) {
		return nil, fmt.Errorf("adding %d and %d elements", len(av), len(bv))
	}
	out := make([]float64, len(av))
	for i := range av {
		out[i] = av[i] + bv[i]
	}
	return New("", out, a.Shape...), nil
}

// Free releases the device buffers owned by the outputs recorded on the tape.
func (tp *Tape) Free() {
	for _, n := range tp.nodes {
		n.output.Free()
	}
}

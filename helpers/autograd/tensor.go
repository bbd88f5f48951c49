package autograd

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// Tensor is a dense row-major array whose values live on the host (float64), on the GPU (float32),
// or both. Each side is made on demand: Values downloads a GPU-only tensor, Device uploads a
// host-only one. A tensor is immutable once a Function has read it; perturbing an input (as
// GradCheck does) means making a new tensor.
//
// The gradient of a tensor after Tape.Backward is in Grad (nil when none flowed to it).
type Tensor struct {
	// Name labels the tensor in errors and reports.
	Name string
	// Shape is the size of each dimension; a scalar has an empty shape.
	Shape []int
	// RequiresGrad marks a leaf whose gradient the tape must compute; outputs of functions applied
	// to such tensors get it set by the tape.
	RequiresGrad bool
	// Grad is the accumulated gradient after Backward.
	Grad *Tensor

	host []float64
	dev  *gpu.Buffer[float32]
	own  bool // dev was allocated for this tensor and is freed by Free
}

// New makes a host tensor holding data (not copied) with the given shape. A nil shape means a
// vector of len(data).
func New(name string, data []float64, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	return &Tensor{Name: name, Shape: shape, host: data}
}

// Scalar makes a host scalar tensor.
func Scalar(name string, v float64) *Tensor { return &Tensor{Name: name, host: []float64{v}} }

// Param is New with RequiresGrad set: a leaf whose gradient Backward computes.
func Param(name string, data []float64, shape ...int) *Tensor {
	t := New(name, data, shape...)
	t.RequiresGrad = true
	return t
}

// OnDevice makes a tensor whose values are the float32 buffer buf. With own set, Free releases
// the buffer.
func OnDevice(name string, buf *gpu.Buffer[float32], own bool, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{buf.Len()}
	}
	return &Tensor{Name: name, Shape: shape, dev: buf, own: own}
}

// Len is the number of elements: the product of the shape.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// OnHost reports whether the host values are present (Values will not copy).
func (t *Tensor) OnHost() bool { return t.host != nil }

// OnGPU reports whether a device copy is present (Device will not upload).
func (t *Tensor) OnGPU() bool { return t.dev != nil }

// Values returns the host values, downloading and widening the device copy the first time.
// The slice is the tensor's own: do not modify it.
func (t *Tensor) Values() ([]float64, error) {
	if t.host != nil {
		return t.host, nil
	}
	if t.dev == nil {
		return nil, fmt.Errorf("tensor %s has neither host values nor a device buffer", t.label())
	}
	f, err := t.dev.ToHost()
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.label(), err)
	}
	t.host = make([]float64, len(f))
	for i, v := range f {
		t.host[i] = float64(v)
	}
	return t.host, nil
}

// Device returns the float32 device copy, rounding and uploading the host values the first time.
func (t *Tensor) Device(s *gpu.Session) (*gpu.Buffer[float32], error) {
	if t.dev != nil {
		return t.dev, nil
	}
	if t.host == nil {
		return nil, fmt.Errorf("tensor %s has neither host values nor a device buffer", t.label())
	}
	if s == nil {
		return nil, fmt.Errorf("tensor %s: uploading needs a GPU session", t.label())
	}
	f := make([]float32, len(t.host))
	for i, v := range t.host {
		f[i] = float32(v)
	}
	b, err := gpu.Upload(s, f)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.label(), err)
	}
	t.dev, t.own = b, true
	return b, nil
}

// Free releases a device buffer the tensor owns (not its gradient's: free that separately). The
// host values stay.
func (t *Tensor) Free() {
	if t == nil {
		return
	}
	if t.own && t.dev != nil {
		t.dev.Free()
	}
	t.dev, t.own = nil, false
}

func (t *Tensor) label() string {
	if t.Name != "" {
		return t.Name
	}
	return fmt.Sprintf("%v", t.Shape)
}

// String prints the name, shape and where the values are.
func (t *Tensor) String() string {
	where := ""
	switch {
	case t.host != nil && t.dev != nil:
		where = "host+gpu"
	case t.host != nil:
		where = "host"
	case t.dev != nil:
		where = "gpu"
	}
	return fmt.Sprintf("%s%v (%s)", t.Name, t.Shape, where)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Package oneflow is lesson 02, bandwidth and atomics, after BBuf's CUDA notes on three OneFlow
// techniques: a vectorised elementwise template (z = x*y), fast half atomics, and a nearest 2x
// upsample specialised with Pack2X, forward and backward, in float and half.
//
// The kernels only move memory, so every step is judged by the fraction of the GPU's measured
// device-to-device copy bandwidth it reaches, checked first against a float64 reference on
// NaN-poisoned outputs. The article's A100 tables are kept as data beside the reader's numbers.
//
//	env, _ := lab.Open()
//	run, err := oneflow.RunElementwise(env, true) // or env.Results(oneflow.Lesson, false)
//	for _, t := range oneflow.Tables(run) { t.Display() }
package oneflow

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/half"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// ID names the lesson's results and notebook.
const ID = "02_oneflow"

// Lesson is lesson 02 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Bandwidth and atomics: OneFlow's elementwise template, half2 atomics, 2x nearest upsample",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises, NotebookQuick: true}

// Block is the block size of every kernel of the lesson, as in the article.
const Block = 256

// Waves is the grid-size rule's bound: at most this many waves of resident blocks.
const Waves = 32

// NumBlocks is the article's grid-size rule: enough blocks of 256 threads to give each of work
// items (packs) a thread, but no more than Waves times the blocks the GPU holds at once, and at
// least one. Past that bound a grid-stride loop gives each thread several packs.
func NumBlocks(d gpu.DeviceInfo, work int) int {
	return gpu.WavesGrid(d, work, Block, Waves)
}

// DType is an element type of the lesson: float32 or float16.
type DType string

// The lesson's element types.
const (
	F32 DType = "float32"
	F16 DType = "float16"
)

// DTypes are both element types, in table order.
var DTypes = []DType{F32, F16}

// Size is the element size in bytes.
func (d DType) Size() int {
	if d == F16 {
		return 2
	}
	return 4
}

// Pack is the elementwise template's pack: 16 bytes of elements (4 floats, 8 halves).
func (d DType) Pack() int { return 16 / d.Size() }

func (d DType) suffix() string {
	if d == F16 {
		return "f16"
	}
	return "f32"
}

// Round returns v as the dtype stores it (float32 or binary16, round to nearest even).
func (d DType) Round(v float64) float64 {
	if d == F16 {
		return RoundHalf(v)
	}
	return float64(float32(v))
}

// RoundHalf rounds a float64 to the nearest binary16 value (ties to even) in one step, with
// subnormals and overflow to infinity. Rounding through float32 first could round twice.
func RoundHalf(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return v
	}
	a := math.Abs(v)
	_, e := math.Frexp(a) // a = m * 2^e, m in [0.5, 1)
	exp := e - 1          // a in [2^exp, 2^(exp+1))
	if exp < -14 {
		exp = -14 // subnormal spacing 2^-24
	}
	ulp := math.Ldexp(1, exp-10)
	r := math.RoundToEven(a/ulp) * ulp
	if r > 65504 {
		r = math.Inf(1)
	}
	return math.Copysign(r, v)
}

// halfBits converts a value already representable in half to its bits.
func halfBits(v float64) half.Half { return half.FromFloat32(float32(v)) }

// Buffer is a device tensor of either dtype: the float32 or the half buffer is set.
type Buffer struct {
	DType DType
	F32   *gpu.Buffer[float32]
	F16   *gpu.Buffer[half.Half]
	owned []interface{ Free() error }
}

// DevicePtr is the tensor's address, for kernel arguments.
func (b *Buffer) DevicePtr() uintptr {
	if b.DType == F16 {
		return b.F16.DevicePtr()
	}
	return b.F32.DevicePtr()
}

// Len is the number of elements.
func (b *Buffer) Len() int {
	if b.DType == F16 {
		return b.F16.Len()
	}
	return b.F32.Len()
}

// Bytes is the size in bytes.
func (b *Buffer) Bytes() int64 { return int64(b.Len()) * int64(b.DType.Size()) }

// alloc allocates n elements starting off elements into a fresh allocation (off > 0 makes a
// misaligned view for tests).
func alloc(s *gpu.Session, d DType, n, off int) (*Buffer, error) {
	b := &Buffer{DType: d}
	if d == F16 {
		whole, err := gpu.Alloc[half.Half](s, n+off)
		if err != nil {
			return nil, err
		}
		b.owned = append(b.owned, whole)
		if b.F16, err = whole.View(off, n); err != nil {
			whole.Free()
			return nil, err
		}
		return b, nil
	}
	whole, err := gpu.Alloc[float32](s, n+off)
	if err != nil {
		return nil, err
	}
	b.owned = append(b.owned, whole)
	if b.F32, err = whole.View(off, n); err != nil {
		whole.Free()
		return nil, err
	}
	return b, nil
}

// View is elements [off, off+n) of b, sharing its memory.
func (b *Buffer) View(off, n int) (*Buffer, error) {
	v := &Buffer{DType: b.DType}
	var err error
	if b.DType == F16 {
		v.F16, err = b.F16.View(off, n)
	} else {
		v.F32, err = b.F32.View(off, n)
	}
	return v, err
}

// Free releases the allocation (not for views).
func (b *Buffer) Free() {
	if b == nil {
		return
	}
	for _, o := range b.owned {
		o.Free()
	}
	b.owned = nil
}

// Upload copies host values (already representable in the dtype) to the device.
func (b *Buffer) Upload(vals []float32) error {
	if b.DType == F16 {
		return b.F16.CopyFromHost(half.FromFloat32s(vals))
	}
	return b.F32.CopyFromHost(vals)
}

// Poison fills the tensor with NaN, so an unwritten element fails the check.
func (b *Buffer) Poison() error {
	if b.DType == F16 {
		return b.F16.Poison()
	}
	return b.F32.Poison()
}

// Read copies the tensor back as float64 values.
func (b *Buffer) Read() ([]float64, error) {
	if b.DType == F16 {
		h, err := b.F16.ToHost()
		if err != nil {
			return nil, err
		}
		return half.Float64s(h), nil
	}
	f, err := b.F32.ToHost()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, nil
}

// RandomValues draws n values uniformly in [-1, 1) from a seeded generator, rounded to the dtype.
func RandomValues(d DType, n int, seed uint64) []float32 {
	r := newRand(seed)
	out := make([]float32, n)
	for i := range out {
		v := 2*r.Float32() - 1
		if d == F16 {
			v = half.FromFloat32(v).Float32()
		}
		out[i] = v
	}
	return out
}

func fmtShape(s [4]int) string { return fmt.Sprintf("(%d,%d,%d,%d)", s[0], s[1], s[2], s[3]) }

// Package dtype names the storage types of the lessons' tensors (float32, float16, bfloat16) and
// converts between float32 values and the 16-bit formats' bits, rounding to nearest even
// (helpers/half does the rounding).
package dtype

import "github.com/cudalessons/cudalessons/helpers/half"

// DType is a storage type: float32 or one of the two 16-bit formats. Its value is the name the
// records and tables show.
type DType string

// The storage types.
const (
	F32  DType = "float32"
	F16  DType = "float16"
	BF16 DType = "bfloat16"
)

// Size is the element size in bytes.
func (d DType) Size() int {
	if d == F32 {
		return 4
	}
	return 2
}

// Round returns v as d stores it (round to nearest even); float32 keeps it.
func (d DType) Round(v float32) float32 {
	switch d {
	case F16:
		return half.FromFloat32(v).Float32()
	case BF16:
		return half.BF16FromFloat32(v).Float32()
	}
	return v
}

// Bits16 is v rounded to the 16-bit pattern of d, F16 or BF16 (any other d is taken as F16).
func (d DType) Bits16(v float32) uint16 {
	if d == BF16 {
		return uint16(half.BF16FromFloat32(v))
	}
	return uint16(half.FromFloat32(v))
}

// Value16 is the exact value of a 16-bit pattern of d, F16 or BF16.
func (d DType) Value16(b uint16) float64 {
	if d == BF16 {
		return half.BF16(b).Float64()
	}
	return half.Half(b).Float64()
}

// Round16 rounds float32 values to d's 16-bit patterns.
func (d DType) Round16(xs []float32) []uint16 {
	out := make([]uint16, len(xs))
	for i, v := range xs {
		out[i] = d.Bits16(v)
	}
	return out
}

// Widen16 is the exact float64 value of each 16-bit pattern of d.
func (d DType) Widen16(bs []uint16) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		out[i] = d.Value16(b)
	}
	return out
}

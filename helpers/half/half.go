// Package half converts between float32 and IEEE 754 binary16 ("half"), the storage type of the
// half-precision kernels. A Half is the 16-bit pattern a CUDA __half holds, so a []Half uploads as is.
package half

import "math"

// Half is an IEEE 754 binary16 value, bit for bit.
type Half uint16

// FromFloat32 rounds f to the nearest half, ties to even, with subnormals, infinities and NaN.
func FromFloat32(f float32) Half {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return Half(sign | 0x7e00)
		}
		return Half(sign | 0x7c00)
	case exp-127 > 15: // overflow
		return Half(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 1 { // normal
		m := man >> 13
		rest := man & 0x1fff
		h := uint32(e)<<10 | m
		if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
			h++ // may carry into the exponent, which is the right rounding (up to Inf)
		}
		return Half(uint32(sign) | h)
	}
	if e < -10 { // below half the smallest subnormal
		return Half(sign)
	}
	man |= 0x800000 // implicit bit
	shift := uint32(14 - e)
	m := man >> shift
	rest := man & (1<<shift - 1)
	halfway := uint32(1) << (shift - 1)
	if rest > halfway || (rest == halfway && m&1 == 1) {
		m++
	}
	return Half(uint32(sign) | m)
}

// Float32 is the exact float32 value of h.
func (h Half) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man * 2^-24
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// Float64 is the exact float64 value of h.
func (h Half) Float64() float64 { return float64(h.Float32()) }

// FromFloat32s rounds a slice to halves.
func FromFloat32s(xs []float32) []Half {
	out := make([]Half, len(xs))
	for i, x := range xs {
		out[i] = FromFloat32(x)
	}
	return out
}

// Float64s widens a slice of halves exactly.
func Float64s(hs []Half) []float64 {
	out := make([]float64, len(hs))
	for i, h := range hs {
		out[i] = h.Float64()
	}
	return out
}

// BF16 is a bfloat16 value, bit for bit: the upper 16 bits of a float32 (8 exponent bits, 7
// mantissa bits), the storage type of the bfloat16 kernels. A []BF16 uploads as a CUDA __nv_bfloat16
// array.
type BF16 uint16

// BF16FromFloat32 rounds f to the nearest bfloat16, ties to even; NaN stays a (quiet) NaN and
// values past the largest bfloat16 round to infinity.
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign, make it quiet
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 is the exact float32 value of h.
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// Float64 is the exact float64 value of h.
func (h BF16) Float64() float64 { return float64(h.Float32()) }

// BF16FromFloat32s rounds a slice to bfloat16.
func BF16FromFloat32s(xs []float32) []BF16 {
	out := make([]BF16, len(xs))
	for i, x := range xs {
		out[i] = BF16FromFloat32(x)
	}
	return out
}

// BF16Float64s widens a slice of bfloat16 values exactly.
func BF16Float64s(hs []BF16) []float64 {
	out := make([]float64, len(hs))
	for i, h := range hs {
		out[i] = h.Float64()
	}
	return out
}

package half

import "math"

// BFloat16 is a bfloat16 value bit for bit (the upper 16 bits of a float32: 8 exponent bits, 7
// mantissa bits), the pattern a CUDA __nv_bfloat16 holds, so a []BFloat16 uploads as is.
type BFloat16 uint16

// BFloat16FromFloat32 rounds f to the nearest bfloat16, ties to even; NaN stays a (quiet) NaN.
func BFloat16FromFloat32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if f != f {
		return BFloat16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1 // round to nearest even on the 16 bits dropped
	return BFloat16(b >> 16)
}

// Float32 is the exact float32 value of h.
func (h BFloat16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// BFloat16s rounds a slice to bfloat16.
func BFloat16s(xs []float32) []BFloat16 {
	out := make([]BFloat16, len(xs))
	for i, x := range xs {
		out[i] = BFloat16FromFloat32(x)
	}
	return out
}

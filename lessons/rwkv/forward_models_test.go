package rwkv

import (
	"fmt"
	"math"
	"testing"
)

// CPU models of the index arithmetic of the register-tile (v5) and tensor-core (v6) kernels, run in
// float64 against the reference on shapes around their edges. They mirror the kernels' loops and
// shared-memory layouts line by line, so an off-by-one in a window, a padding or a skipped tile shows
// here without a GPU.

// modelFwdV5 follows 5_register_tile.cu: reversed w with zero padding, k rows with TT zeros in front,
// tiles of TT outputs, blocks of TT steps of d with the lo/hi window swap, mirrored tile pairs.
func modelFwdV5(s Shape, w, k []float32, eps float64, TT int) []float64 {
	const ROWS = V5Rows
	tpad, S, _ := V5LayoutTT(s.T, TT)
	out := make([]float64, s.Len())
	for i := range out {
		out[i] = math.NaN()
	}
	for blk := 0; blk < s.C*((s.B+ROWS-1)/ROWS); blk++ {
		c, b0 := blk%s.C, (blk/s.C)*ROWS
		wr := make([]float64, tpad)
		for d := range wr {
			if d < s.T {
				wr[d] = float64(w[c*s.T+(s.T-1)-d])
			}
		}
		ks := make([]float64, ROWS*S)
		for r := 0; r < ROWS; r++ {
			for p := 0; p < S; p++ {
				if t, b := p-TT, b0+r; b < s.B && t >= 0 && t < s.T {
					ks[r*S+p] = float64(k[(b*s.C+c)*s.T+t])
				}
			}
		}
		for lane := 0; lane < 32; lane++ {
			b := b0 + lane
			kr := lane*S + TT // index of k[b][c][0] in ks
			tile := func(t0 int) {
				acc := make([]float64, TT)
				for i := range acc {
					acc[i] = eps
				}
				load := func(at int) []float64 { return append([]float64(nil), ks[kr+at:kr+at+TT]...) }
				step := func(lo, hi []float64, d0 int) {
					for j := 0; j < TT; j++ {
						for i := 0; i < TT; i++ {
							x := TT + i - j
							v := 0.0
							if x >= TT {
								v = hi[x-TT]
							} else {
								v = lo[x]
							}
							acc[i] += wr[d0+j] * v
						}
					}
				}
				hi := load(t0)
				nblk := t0/TT + 1
				d0 := 0
				var lo []float64
				for m := 0; m+1 < nblk; m += 2 {
					lo = load(t0 - d0 - TT)
					step(lo, hi, d0)
					d0 += TT
					hi = load(t0 - d0 - TT)
					step(hi, lo, d0)
					d0 += TT
				}
				if nblk&1 == 1 {
					lo = load(t0 - d0 - TT)
					step(lo, hi, d0)
				}
				if b >= s.B {
					return
				}
				for i := 0; i < TT; i++ {
					if t0+i < s.T {
						out[(b*s.C+c)*s.T+t0+i] = acc[i]
					}
				}
			}
			NT := tpad / TT
			for p := 0; p < (NT+1)/2; p++ { // every warp's pairs, in any order
				tile(p * TT)
				if NT-1-p != p {
					tile((NT - 1 - p) * TT)
				}
			}
		}
	}
	return out
}

// modelFwdV6 follows 6_tensorcore_tf32.cu in float64: K staged with stride T+4, the skewed 8-row array
// M, 32-wide column tiles in mirrored pairs, 16x16x8 tile products, the zero tiles skipped.
func modelFwdV6(s Shape, w, k []float32, eps float64) []float64 {
	const PAD = 32
	T := s.T
	SK, L := T+4, T+PAD+8
	out := make([]float64, s.Len())
	for i := range out {
		out[i] = math.NaN()
	}
	for blk := 0; blk < s.C*s.B/32; blk++ {
		c, b0 := blk%s.C, (blk/s.C)*32
		Ks := make([]float64, 32*SK)
		for r := 0; r < 32; r++ {
			for u := 0; u < T; u++ {
				Ks[r*SK+u] = float64(k[((b0+r)*s.C+c)*T+u])
			}
		}
		M := make([]float64, 8*L)
		for i := range M {
			r, x := i/L, i%L
			if d := x - r - PAD; d >= 0 && d < T {
				M[i] = float64(w[c*T+(T-1)-d])
			}
		}
		// mma: acc (16x16) += A (16x8 at a, ld lda) * B (8x16 at b, ld ldb)
		mma := func(acc []float64, a []float64, ao, lda int, b []float64, bo, ldb int) {
			for i := 0; i < 16; i++ {
				for j := 0; j < 16; j++ {
					for kk := 0; kk < 8; kk++ {
						acc[i*16+j] += a[ao+i*lda+kk] * b[bo+kk*ldb+j]
					}
				}
			}
		}
		NT := T / 32
		tile := func(n int) {
			t0 := n * 32
			acc := make([][]float64, 4) // [i*2+j]
			for x := range acc {
				acc[x] = make([]float64, 256)
				for e := range acc[x] {
					acc[x][e] = eps
				}
			}
			// W fragments are tracked by their offset in M: b2 = left(u0-16), b1 = left(u0-8).
			b2, b1 := PAD+t0+16, PAD+t0+8
			for u0 := 0; u0 < t0+16; u0 += 8 {
				bl := PAD + t0 - u0
				for i := 0; i < 2; i++ {
					mma(acc[i*2+0], Ks, 16*i*SK+u0, SK, M, bl, L)
					mma(acc[i*2+1], Ks, 16*i*SK+u0, SK, M, b2, L)
				}
				b2, b1 = b1, bl
			}
			for u0 := t0 + 16; u0 < t0+32; u0 += 8 {
				for i := 0; i < 2; i++ {
					mma(acc[i*2+1], Ks, 16*i*SK+u0, SK, M, b2, L)
				}
				b2 = b1
			}
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					for r := 0; r < 16; r++ {
						for cc := 0; cc < 16; cc++ {
							out[((b0+16*i+r)*s.C+c)*T+t0+16*j+cc] = acc[i*2+j][r*16+cc]
						}
					}
				}
			}
		}
		for p := 0; p < (NT+1)/2; p++ {
			tile(p)
			if NT-1-p != p {
				tile(NT - 1 - p)
			}
		}
	}
	return out
}

func compareFwdModel(t *testing.T, name string, s Shape, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s model on %v: element %d (b=%d c=%d t=%d) = %v, want %v", name, s, i,
				i/(s.C*s.T), (i/s.T)%s.C, i%s.T, got[i], want[i])
		}
	}
}

func TestRegisterTileV5Model(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {3, 2, 17}, {33, 2, 40}, {2, 1, 16}, {1, 2, 100}, {5, 1, 256}} {
		w, k := Inputs(s, 21)
		for _, tt := range V5Tiles {
			compareFwdModel(t, fmt.Sprintf("v5 TT=%d", tt), s, modelFwdV5(s, w, k, Eps, tt), Forward(s, w, k, Eps))
		}
	}
}

func TestTensorCoreV6Model(t *testing.T) {
	for _, s := range []Shape{{32, 1, 32}, {32, 2, 64}, {64, 1, 96}, {32, 1, 160}} {
		w, k := Inputs(s, 22)
		compareFwdModel(t, "v6", s, modelFwdV6(s, w, k, Eps), Forward(s, w, k, Eps))
	}
}

// modelFwdV2 follows 2_float4.cu (and the per-row body of v3 and v4): four outputs per thread, the
// main loop up to u = t and the triangular tail, with wb = ws + T-4-t.
func modelFwdV2(s Shape, w, k []float32, eps float64) []float64 {
	T := s.T
	out := make([]float64, s.Len())
	for row := 0; row < s.B*s.C; row++ {
		c := row % s.C
		ws := func(i int) float64 { return float64(w[c*T+i]) }
		ks := func(i int) float64 { return float64(k[row*T+i]) }
		for q := 0; q < T/4; q++ {
			t := 4 * q
			wb := func(i int) float64 { return ws(T - 4 - t + i) }
			var x, y, z, v = eps, eps, eps, eps
			for u := 0; u <= t; u++ {
				kv := ks(u)
				x += wb(u+3) * kv
				y += wb(u+2) * kv
				z += wb(u+1) * kv
				v += wb(u) * kv
			}
			y += wb(t+3) * ks(t+1)
			z += wb(t+2)*ks(t+1) + wb(t+3)*ks(t+2)
			v += wb(t+1)*ks(t+1) + wb(t+2)*ks(t+2) + wb(t+3)*ks(t+3)
			copy(out[row*T+t:], []float64{x, y, z, v})
		}
	}
	return out
}

func TestFloat4V2Model(t *testing.T) {
	for _, s := range []Shape{{1, 1, 4}, {2, 3, 8}, {1, 2, 36}} {
		w, k := Inputs(s, 23)
		compareFwdModel(t, "v2", s, modelFwdV2(s, w, k, Eps), Forward(s, w, k, Eps))
	}
}

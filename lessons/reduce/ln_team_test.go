package reduce

import (
	"math"
	"slices"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// This file replays step 6's statistics (l6_grid_resident.cu) and the backward (l7_backward.cu)
// in float32 on the CPU, operation by operation in the kernels' order: each thread's sums over its
// float4s, the butterfly shuffles of block_sum, every block's (count, mean, M2) triple, the slow
// path's rescaled sums, and warp 0's Chan merge lane by lane (the merge is not symmetric), lane 0's
// verdict and statistics. What it does not replay: the GPU build's fused multiply-adds and
// rsqrtf's last bits, which move results by an ulp, not across a check.

// mul32 is a float32 product that Go may not fuse into an add (the conversion rounds it).
func mul32(a, b float32) float32 { return float32(a * b) }

// warpSum32 is warp_sum: the xor butterfly over 32 lanes, the same value in every lane.
func warpSum32(v []float32) float32 {
	l := append([]float32(nil), v...)
	for o := 16; o > 0; o >>= 1 {
		for i := 0; i < o; i++ {
			l[i] = l[i] + l[i+o]
		}
	}
	return l[0]
}

// blockSum32 is block_sum over one value per thread (a multiple of 32 threads, at most 1024): the
// warps' sums, then one warp over them with 0 for the lanes past the last warp.
func blockSum32(v []float32) float32 {
	warps := make([]float32, 32)
	for w := 0; w < len(v)/32; w++ {
		warps[w] = warpSum32(v[32*w : 32*w+32])
	}
	return warpSum32(warps)
}

// welford32 and chan32 are the kernels' triple and Chan's merge, with their empty-triple returns.
type welford32 struct{ n, mean, m2 float32 }

func chan32(a, b welford32) welford32 {
	if b.n == 0 {
		return a
	}
	if a.n == 0 {
		return b
	}
	n := a.n + b.n
	d, f := b.mean-a.mean, b.n/n
	return welford32{n, a.mean + mul32(d, f), a.m2 + b.m2 + mul32(mul32(mul32(d, d), a.n), f)}
}

// warpChan32 is warp 0's shuffle merge: lane l merges lane l^o's triple at each step.
func warpChan32(lanes []welford32) []welford32 {
	l := append([]welford32(nil), lanes...)
	for o := 16; o > 0; o >>= 1 {
		next := make([]welford32, 32)
		for i := range next {
			next[i] = chan32(l[i], l[i^o])
		}
		l = next
	}
	return l
}

const slowScale32 = 0x1p-80

func rsqrt32(v float32) float32 { return float32(1 / math.Sqrt(float64(v))) }

// rstdOf32 is rstd_of: NaN for an infinite variance.
func rstdOf32(v, eps float32) float32 {
	if math.IsInf(float64(v), 1) {
		return float32(math.NaN())
	}
	return rsqrt32(v + eps)
}

// simGridResident replays ln_grid_resident on one sample x of M (M % 4 == 0) with a team of g
// blocks of 1024 threads, each holding chunk4 float4s: y, and the saved mean and rstd. shift is the
// kernel's shift K = x[0] (every block stores and sums x - K); without it, the kernel before it.
func simGridResident(x, w, b []float32, g, chunk4 int, eps float32, shift bool) (y []float32, mean, rstd float32) {
	const threads = 1024
	M := len(x)
	v := x // the slices in shared memory
	triples := make([]welford32, g)
	for rank := range g {
		lo := min(M/4, rank*chunk4)
		hi := min(M/4, lo+chunk4)
		c4 := hi - lo
		var K float32
		if shift && c4 > 0 {
			K = x[4*lo]
		}
		part := make([]float32, threads)
		for t := range threads {
			for j := t; j < c4; j += threads {
				q := v[4*(lo+j):]
				part[t] += ((q[0] - K) + (q[1] - K)) + ((q[2] - K) + (q[3] - K))
			}
		}
		cnt := float32(4 * c4)
		var mloc float32
		if cnt > 0 {
			mloc = blockSum32(part) / cnt
		}
		dev := func(scale float32) float32 {
			for t := range threads {
				part[t] = 0
				for j := t; j < c4; j += threads {
					q := v[4*(lo+j):]
					var d [4]float32
					for k := range d {
						d[k] = mul32(q[k]-K, scale) - mul32(mloc, scale)
					}
					part[t] += (mul32(d[0], d[0]) + mul32(d[1], d[1])) + (mul32(d[2], d[2]) + mul32(d[3], d[3]))
				}
			}
			return blockSum32(part)
		}
		q := dev(1)
		if math.IsInf(float64(q), 0) && !math.IsInf(float64(mloc), 0) && !math.IsNaN(float64(mloc)) {
			q = -dev(slowScale32)
		}
		triples[rank] = welford32{cnt, K + mloc, q}
	}
	lanes := make([]welford32, 32)
	marked := false
	for l := range lanes {
		for i := l; i < g; i += 32 {
			lanes[l] = chan32(lanes[l], triples[i])
			marked = marked || triples[i].m2 < 0
		}
	}
	a := warpChan32(lanes)[0]
	finite := !math.IsInf(float64(a.mean), 0) && !math.IsNaN(float64(a.mean))
	if (marked || math.IsInf(float64(a.m2), 1)) && finite {
		for l := range lanes {
			lanes[l] = welford32{}
			for i := l; i < g; i += 32 {
				t := triples[i]
				m2 := mul32(mul32(t.m2, slowScale32), slowScale32)
				if t.m2 < 0 {
					m2 = -t.m2
				}
				lanes[l] = chan32(lanes[l], welford32{t.n, mul32(t.mean, slowScale32), m2})
			}
		}
		rstd = mul32(slowScale32, rsqrt32(warpChan32(lanes)[0].m2/float32(M)))
	} else {
		rstd = rstdOf32(a.m2/float32(M), eps)
	}
	y = make([]float32, M)
	for i := range v {
		y[i] = mul32(mul32(v[i]-a.mean, rstd), w[i]) + b[i]
	}
	return y, a.mean, rstd
}

// simBackward replays l7_backward.cu's float4 path on N samples of M with the saved mean and rstd:
// ln_bwd_partials over P parts (256 threads), ln_bwd_finalize, and ln_bwd_dx's columns.
func simBackward(x, w, dy, mean, rstd []float32, N, M, P int) (dx, dw, db []float32) {
	const threads = 256
	chunk := ((M+P-1)/P + 3) / 4 * 4
	c := make([]float32, 2*N)
	for n := range N {
		xs, ds := x[n*M:(n+1)*M], dy[n*M:(n+1)*M]
		p1, p2 := make([]float32, threads), make([]float32, threads)
		for p := range P {
			lo := min(M, p*chunk)
			hi := min(M, lo+chunk)
			s1, s2 := make([]float32, threads), make([]float32, threads)
			for t := range threads {
				for j := lo/4 + t; j < hi/4; j += threads {
					var gg, h [4]float32
					for k := range 4 {
						gg[k] = mul32(ds[4*j+k], w[4*j+k])
						h[k] = mul32(xs[4*j+k]-mean[n], rstd[n])
					}
					s1[t] += (gg[0] + gg[1]) + (gg[2] + gg[3])
					s2[t] += (mul32(gg[0], h[0]) + mul32(gg[1], h[1])) + (mul32(gg[2], h[2]) + mul32(gg[3], h[3]))
				}
			}
			p1[p], p2[p] = blockSum32(s1), blockSum32(s2) // P <= 256: a partial per thread of the finalize
		}
		c[2*n], c[2*n+1] = blockSum32(p1)/float32(M), blockSum32(p2)/float32(M)
	}
	dx, dw, db = make([]float32, N*M), make([]float32, M), make([]float32, M)
	for j := range M {
		for n := N - 1; n >= 0; n-- {
			i := n*M + j
			h := mul32(x[i]-mean[n], rstd[n])
			dx[i] = mul32(rstd[n], mul32(dy[i], w[j])-c[2*n]-mul32(h, c[2*n+1]))
			dw[j] += mul32(dy[i], h)
			db[j] += dy[i]
		}
	}
	return dx, dw, db
}

// lnHostileKind is a layer norm sample: uniform [-1, 1) times scale, plus add (scale 0: constant).
type lnHostileKind struct {
	name       string
	scale, add float32
}

// lnHostileKinds are TestLayerNormOpHostile's samples, one per sample: constant 3.5, constant 1e30,
// uniform [-1, 1) times 1e-30, 1e-3, 1e15 and 2^-130 (subnormals), and constant 10000.3 (a value
// whose float32 sums round, far inside float32's range).
var lnHostileKinds = []lnHostileKind{{"constant 3.5", 0, 3.5}, {"constant 1e30", 0, 1e30}, {"near 1e-30", 1e-30, 0},
	{"near 1e-3", 1e-3, 0}, {"near 1e15", 1e15, 0}, {"near 2^-130", 0x1p-130, 0}, {"constant 10000.3", 0, 10000.3}}

// lnHostileX is x for the samples kinds (one each) of M values, from seed.
func lnHostileX(kinds []lnHostileKind, M int, seed uint64) []float32 {
	x := Uniform(F32, len(kinds)*M, -1, 1, seed)
	for n, k := range kinds {
		for j := n * M; j < (n+1)*M; j++ {
			x[j] = x[j]*k.scale + k.add
		}
	}
	return x
}

// Step 6 replayed in float32 at (6, 65540) and (7, 65540) with an H200's plans (teams of 22 and 18
// blocks) on TestLayerNormOpHostile's samples, weight, bias and dy at M = 65540: y sample by
// sample, and the backward's dx, dweight and dbias on the replayed statistics, match the float64
// references at LNOpCheck's tolerances. The kernel before the slices' shift summed x itself: the
// float32 sum of a constant slice rounds when the value needs most of float32's 24 bits, so the
// slice means were off by ulps of the value and the merge saw a spread; at 1e30 the squared ulps
// (1e45) overflowed into the slow path, which took that rounding for the sample's spread and gave
// +-w + b where b is right. That kernel must fail here on those samples (its replay gives the GPU's
// figures for (6, 65540): y rel L2 0.83, dx 0.45, dweight 1.0), so the sample set pins the failure. Then single
// samples: the overflow case near 1e30 and near 1e20 (the slow path), a constant -7e35 (its
// unshifted slice sums overflowed), and a first value of 1e4 beside uniform [-1, 1) (a shift far
// from the rest of its slice: x itself is normalised, so nothing rounds at 1e4).
func TestLayerNormGridResidentReplay(t *testing.T) {
	prof, err := gpu.LookupProfile("h200")
	if err != nil {
		t.Fatal(err)
	}
	const M, seed = 65540, 1012 // TestLayerNormOpHostile's seeds at M = 65540
	w, b := Uniform(F32, M, 0.5, 1.5, seed+1), Uniform(F32, M, -0.5, 0.5, seed+2)
	planFor := func(N int) LNPlan {
		t.Helper()
		plan, err := PlanLayerNorm(prof.Device(), LNSteps[5], N, M, true)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	for _, c := range []struct {
		kinds        []lnHostileKind
		team, chunk4 int
		failedBefore []string // the samples the unshifted kernel gets wrong
	}{{lnHostileKinds[:6], 22, 745, []string{"constant 1e30"}}, {lnHostileKinds, 18, 911, []string{"constant 1e30", "constant 10000.3"}}} {
		N := len(c.kinds)
		plan := planFor(N)
		if plan.Team != c.team || plan.Chunk4 != c.chunk4 {
			t.Errorf("the H200's plan for (%d, %d): teams of %d blocks of %d float4s, want %d of %d", N, M, plan.Team, plan.Chunk4, c.team, c.chunk4)
		}
		x, dy := lnHostileX(c.kinds, M, 1002), Uniform(F32, N*M, -1, 1, seed+3)
		want := make([]float64, 0, N*M)
		for n := range N {
			yn, _, _ := LayerNormSample(x[n*M:(n+1)*M], w, b, LNEps)
			want = append(want, yn...)
		}
		dxWant, dwWant, dbWant := LayerNormBackward(x, w, dy, N, M, LNEps)
		tol := LNBackwardTolerance(x, w, dy, N, M)
		for _, shift := range []bool{true, false} {
			var y []float32
			var failed []string
			mean, rstd := make([]float32, N), make([]float32, N)
			for n := range N {
				var yn []float32
				yn, mean[n], rstd[n] = simGridResident(x[n*M:(n+1)*M], w, b, plan.Team, plan.Chunk4, LNEps, shift)
				y = append(y, yn...)
				if r := check.Compare(check.Float64s(yn), want[n*M:(n+1)*M], check.FP32); !r.OK {
					failed = append(failed, c.kinds[n].name)
					if shift {
						t.Errorf("(%d, %d) %s: y %v", N, M, c.kinds[n].name, r)
					}
				}
			}
			dx, dw, db := simBackward(x, w, dy, mean, rstd, N, M, lnBlocks(prof.SMs, N, M))
			res := []check.Result{check.Compare(check.Float64s(y), want, check.FP32), check.Compare(check.Float64s(dx), dxWant, tol),
				check.Compare(check.Float64s(dw), dwWant, tol), check.Compare(check.Float64s(db), dbWant, tol)}
			t.Logf("(%d, %d), teams of %d, slices shifted %v: y %v; dx %v; dweight %v; dbias %v", N, M, plan.Team, shift, res[0], res[1], res[2], res[3])
			if shift {
				for i, r := range res {
					if !r.OK {
						t.Errorf("(%d, %d) replayed: %s %v", N, M, []string{"y", "dx", "dweight", "dbias"}[i], r)
					}
				}
			} else if !slices.Equal(failed, c.failedBefore) {
				t.Errorf("(%d, %d) replayed without the slices' shift: y fails on %q, want %q (the failure these samples pin)", N, M, failed, c.failedBefore)
			}
		}
	}
	plan := planFor(1)
	first := Uniform(F32, M, -1, 1, 1003)
	first[0] = 1e4
	for _, c := range []struct {
		name string
		x    []float32
	}{{"near 1e30", lnHostileX([]lnHostileKind{{"", 1e30, 0}}, M, 1004)}, {"near 1e20", lnHostileX([]lnHostileKind{{"", 1e20, 0}}, M, 1005)},
		{"constant -7e35", lnHostileX([]lnHostileKind{{"", 0, -7e35}}, M, 1006)}, {"first value 1e4", first}} {
		y, _, _ := simGridResident(c.x, w, b, plan.Team, plan.Chunk4, LNEps, true)
		want, _, _ := LayerNormSample(c.x, w, b, LNEps)
		if r := check.Compare(check.Float64s(y), want, check.FP32); !r.OK {
			t.Errorf("%s, teams of %d: y %v", c.name, plan.Team, r)
		}
	}
}

//go:build !nocuda

package kernelbench

import (
	"math"
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// edgeN is the edge-value vector's length: 3 past a multiple of 4, so the scalar tail runs.
const edgeN = 4099

// checkEdgeValues runs unary.cu for every elementwise op on the edge values (edgeValues: zeros,
// subnormals, the formulas' switches, exp's overflow, the largest floats, the infinities, NaN, and
// random values of every scale) into NaN-poisoned outputs, through the packed kernel (aligned
// buffers) and the pack-1 kernel (both views one float past the start), and judges every element
// against the float64 reference under ElementBound; the poison past the end must stay.
func checkEdgeValues(t *testing.T, env *lab.Env) {
	t.Helper()
	x := edgeValues(edgeN)
	xa, err := gpu.Upload(env.Session, x) // 256-byte aligned, as allocations are
	if err != nil {
		t.Fatal(err)
	}
	defer xa.Free()
	xd, err := gpu.Upload(env.Session, append([]float32{0}, x...))
	if err != nil {
		t.Fatal(err)
	}
	defer xd.Free()
	xm, err := xd.View(1, edgeN) // x again, 4 bytes past an aligned address
	if err != nil {
		t.Fatal(err)
	}
	yd, err := gpu.Alloc[float32](env.Session, edgeN+8)
	if err != nil {
		t.Fatal(err)
	}
	defer yd.Free()
	for _, e := range kb.Elementwises() {
		_, p := elementwiseOp(t, e.Op)
		for off, xin := range []*gpu.Buffer[float32]{xa, xm} {
			yout, err := yd.View(off, edgeN)
			if err != nil {
				t.Fatal(err)
			}
			if err := yd.Poison(); err != nil {
				t.Fatal(err)
			}
			run, plan, err := unaryLauncher(env, e, p, xin, yout, edgeN)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[int]string{0: kb.UnaryKernel, 1: kb.UnaryPack1Kernel}[off]; plan.Kernel != want {
				t.Errorf("%s, offset %d: %s, want %s", e.Op, off, plan.Kernel, want)
			}
			if err := run(); err != nil {
				t.Fatal(err)
			}
			all, err := yd.ToHost()
			if err != nil {
				t.Fatal(err)
			}
			got := all[off : off+edgeN]
			if r := judgeElementwise(e, p, x, got); !r.OK {
				i := max(r.FirstBad, 0)
				t.Errorf("%s (%s): %+v; first at x = %g: %g", e.Op, plan.Kernel, r, x[i], got[i])
			}
			for i, v := range all[off+edgeN:] {
				if !math.IsNaN(float64(v)) {
					t.Errorf("%s (%s): wrote %g past the end (element %d)", e.Op, plan.Kernel, v, off+edgeN+i)
					break
				}
			}
		}
	}
	launched := map[string]bool{}
	for _, l := range env.Session.Launches() {
		launched[l.Kernel] = true
	}
	if !launched[kb.UnaryKernel] || !launched[kb.UnaryPack1Kernel] {
		t.Errorf("launched %v: want both %s and %s", env.Session.Launches(), kb.UnaryKernel, kb.UnaryPack1Kernel)
	}
}

// Every op of unary.cu on the GPU within its element bound on the edge values, NaN kept, both
// kernels, no write past the end.
func TestElementwiseEdgeValuesOnTheGPU(t *testing.T) {
	checkEdgeValues(t, labtest.Open(t))
}

// The plan on this GPU: the bytes in flight reach Little's law's figure (unless the packs are at
// their bound) and the grid is lesson 02's rule.
func TestElementwisePlanOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	for _, op := range []kb.Op{kb.ReLU, kb.GELU} {
		e, p := elementwiseOp(t, op)
		n := 1 << 24
		x, err := gpu.Alloc[float32](env.Session, n)
		if err != nil {
			t.Fatal(err)
		}
		y, err := gpu.Alloc[float32](env.Session, n)
		if err != nil {
			t.Fatal(err)
		}
		_, plan, err := unaryLauncher(env, e, p, x, y, n)
		x.Free()
		y.Free()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s on %s (copy %.0f GB/s): %s", op, env.Session.Device.Name, env.Receipt.CopyGBps, plan)
		if plan.Kernel != kb.UnaryKernel || plan.Grid < 1 || (plan.PPT < MaxPacksPerThread && plan.InFlightBytes < plan.NeedBytes) {
			t.Errorf("%s: %+v", op, plan)
		}
	}
}

// KERNELS_TUNE=1: unary.cu's ReLU at KernelBench's size (4096 x 393216 floats) under several
// packs per thread, grids and cache hints, in GB/s and share of the copy bandwidth, to choose
// PlanUnary's rule. Each launch is checked first (every element of a poisoned output).
func TestTuneUnary(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("KERNELS_TUNE not set")
	}
	env := labtest.Open(t)
	e, ok := kb.ElementwiseOf(kb.ReLU)
	if !ok {
		t.Fatal("no ReLU op")
	}
	const n = 4096 * 393216
	x, y, host := tuneBuffers(t, env, n)
	d := env.Session.Device
	bytes := 8.0 * n
	t.Logf("copy bandwidth %.0f GB/s", env.Receipt.CopyGBps)
	for _, hint := range []bool{false, true} {
		for _, ppt := range []int{1, 2, 4, 8} {
			prog, err := env.BuildWith(kb.Unary(), compile.Options{Defines: kb.UnaryDefines(e, ppt, hint)}, kb.UnaryKernel)
			if err != nil {
				t.Fatal(err)
			}
			k, err := prog.Kernel(kb.UnaryKernel)
			if err != nil {
				t.Fatal(err)
			}
			occ, err := k.Occupancy(kb.UnaryBlock, 0)
			if err != nil {
				t.Fatal(err)
			}
			wave := d.SMs * occ.BlocksPerSM
			units := gpu.CeilDiv(gpu.CeilDiv(n, 4), ppt)
			full := gpu.CeilDiv(units, kb.UnaryBlock)
			for _, grid := range []int{wave, 2 * wave, 4 * wave, 8 * wave, 32 * wave, full} {
				grid = min(grid, full)
				cfg := gpu.Config{Grid: gpu.D1(grid), Block: gpu.D1(kb.UnaryBlock)}
				run := func() error { return k.Launch(cfg, x, y, int64(n), float32(0), float32(0)) }
				if err := y.Poison(); err != nil {
					t.Fatal(err)
				}
				if err := run(); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(host))
				for _, off := range []int{0, n - len(host)} {
					v, err := y.View(off, len(host))
					if err != nil {
						t.Fatal(err)
					}
					if err := v.CopyToHost(got); err != nil {
						t.Fatal(err)
					}
					for i, g := range got {
						if w := max(host[(off+i)%len(host)], 0); g != w {
							t.Fatalf("ppt %d grid %d: y[%d] = %g, want %g", ppt, grid, off+i, g, w)
						}
					}
				}
				tm, err := env.Bench.Time(run)
				if err != nil {
					t.Fatal(err)
				}
				gbs := bytes / (tm.Median * 1e-3) / 1e9
				t.Logf("TUNE hint %v ppt %d grid %6d (%5.1f waves): %.3f ms %.0f GB/s %.1f%%", hint, ppt, grid, float64(grid)/float64(wave), tm.Median, gbs, 100*gbs/env.Receipt.CopyGBps)
			}
		}
	}
}

// tuneBuffers allocates a tuning sweep's x and y of n floats each, freed when the test ends, x
// filled with host repeated: a ramp of finite values over [-1, 1] (NaN would take slow paths).
func tuneBuffers(t *testing.T, env *lab.Env, n int) (x, y *gpu.Buffer[float32], host []float32) {
	t.Helper()
	x, err := gpu.Alloc[float32](env.Session, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Free() })
	y, err = gpu.Alloc[float32](env.Session, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { y.Free() })
	host = make([]float32, 1<<20)
	for i := range host {
		host[i] = float32(i%2001)/1000 - 1
	}
	for off := 0; off < n; off += len(host) {
		v, err := x.View(off, min(len(host), n-off))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.CopyFromHost(host[:min(len(host), n-off)]); err != nil {
			t.Fatal(err)
		}
	}
	return x, y, host
}

//go:build !nocuda

package kernelbench

import (
	"math"
	"testing"

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

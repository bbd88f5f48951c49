//go:build !nocuda

package kernelbench

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Ties everywhere: x takes only four values, so every column's maximum and minimum repeat, in the
// rows of every thread that shares the column. Max, min, argmax and argmin on the GPU equal the
// float64 reference exactly (the first index of a tie, as PyTorch), on every sample of the
// NaN-poisoned output.
func TestDimReduceTiesOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	ps, err := kb.Select(kb.SmallProblems(), "49,53,51,52")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		outer, R, inner := p.Reduced()
		t.Logf("%s: (%d, %d, %d), %d threads a column", p.ID(), outer, R, inner, DimReduceSplit(env.Session.Device, outer, R, inner))
		r := rand.New(rand.NewPCG(7, uint64(p.Number)))
		x := make([]float32, p.Tensors[0].Len())
		for i := range x {
			x[i] = float32(r.IntN(4)) / 4
		}
		impl, err := NewBackend(env).Open(p)
		if err != nil {
			t.Fatal(err)
		}
		idx := make([]int, outer)
		for i := range idx {
			idx[i] = i
		}
		tensors := [][]float32{x}
		if err := impl.Load(tensors); err != nil {
			t.Fatal(err)
		}
		got, bad, err := impl.Output(0, idx)
		impl.Free()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Reference(p, kb.SliceInputs(p, tensors, idx), outer)
		if err != nil {
			t.Fatal(err)
		}
		if c := check.Compare(check.Float64s(got), want, Exact); !c.OK || bad != 0 {
			t.Errorf("%s: %v, %d outputs unwritten or out of range", p.ID(), c.Err(), bad)
		}
	}
}

// TestTuneRMSNorm times rms_norm.cu on KernelBench's problem 36 (x of 112 x 64 x 512 x 512) at 1, 2
// and 4 threads a position, a trip per warp and grid-stride loops of a few waves (KERNELS_TUNE=1
// only: the look behind RMSNormParts and RMSNormConfig, not a test of speed).
func TestTuneRMSNorm(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("KERNELS_TUNE not set")
	}
	env := labtest.Open(t)
	const b, c, hw = 112, 64, 512 * 512
	n := b * c * hw
	x, y, _ := tuneBuffers(t, env, n)
	be := NewBackend(env).(backend)
	t.Logf("copy bandwidth %.0f GB/s", env.Receipt.CopyGBps)
	for _, parts := range []int{1, 2, 4} {
		k, err := be.rmsNormKernel(c, parts)
		if err != nil {
			t.Fatal(err)
		}
		occ, err := k.Occupancy(256, 0)
		if err != nil {
			t.Fatal(err)
		}
		wave := env.Session.Device.SMs * occ.BlocksPerSM
		full := RMSNormConfig(b*hw, parts)
		for _, grid := range []int{wave, 2 * wave, 8 * wave, full.Grid.X} {
			cfg := gpu.Config{Grid: gpu.D1(grid), Block: gpu.D1(256)}
			run := func() error { return k.Launch(cfg, x, y, int64(b*hw), int64(hw), float32(1e-5)) }
			tm, err := env.Bench.Time(run)
			if err != nil {
				t.Fatal(err)
			}
			gbps := 8 * float64(n) / (tm.Median * 1e6)
			t.Logf("TUNE parts %d  grid %7d (%d a SM)  %.3f ms  %.0f GB/s  %.1f%% of copy", parts, grid, occ.BlocksPerSM, tm.Median, gbps, 100*gbps/env.Receipt.CopyGBps)
		}
	}
}

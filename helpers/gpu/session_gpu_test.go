//go:build !nocuda

package gpu_test

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

func open(t *testing.T) *gpu.Session {
	t.Helper()
	s, err := gpu.Open()
	if err != nil {
		t.Fatalf("the default build needs a GPU (use -tags nocuda without one): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const scaleSrc = `extern "C" __global__ void scale(float *x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}
extern "C" __global__ void big_smem(float *x) {
	extern __shared__ float tile[];
	tile[threadIdx.x] = threadIdx.x;
	__syncthreads();
	x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}`

func kernels(t *testing.T, s *gpu.Session) *gpu.Module {
	t.Helper()
	res, err := compile.PTX(compile.Source{Name: "scale.cu", Code: scaleSrc}, compile.Options{Arch: s.Device.Arch()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Load(res.PTX)
	if err != nil {
		t.Fatal(err)
	}
	m.Source = "scale.cu"
	return m
}

func TestDeviceInfo(t *testing.T) {
	s := open(t)
	d := s.Device
	t.Logf("%v; peak %.1f TFLOP/s, DRAM %.0f GB/s", d, d.PeakFP32GFLOPS()/1e3, d.TheoreticalBandwidthGBs())
	if d.SMs < 1 || d.MaxThreadsPerBlock < 512 || d.L2Bytes < 1<<20 || d.MemBytes < 1<<30 || d.ClockMHz < 100 || d.DriverVersion < 11000 {
		t.Errorf("implausible device facts: %+v", d)
	}
}

func TestBuffersRoundTripPoisonAndViews(t *testing.T) {
	s := open(t)
	host := []float32{1, 2, 3, 4, 5}
	b, err := gpu.Upload(s, host)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	got, err := b.ToHost()
	if err != nil || got[4] != 5 {
		t.Fatalf("round trip: %v %v", got, err)
	}
	v, err := b.View(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if v.DevicePtr()-b.DevicePtr() != 4 {
		t.Errorf("view offset %d bytes, want 4", v.DevicePtr()-b.DevicePtr())
	}
	if err := v.Poison(); err != nil {
		t.Fatal(err)
	}
	got, _ = b.ToHost()
	if got[0] != 1 || !math.IsNaN(float64(got[1])) || !math.IsNaN(float64(got[3])) || got[4] != 5 {
		t.Errorf("poisoning a view: %v", got)
	}
	if _, err := b.View(3, 5); err == nil {
		t.Error("a view past the end was allowed")
	}
	h, _ := gpu.Alloc[uint16](s, 3)
	defer h.Free()
	h.Poison()
	if hs, _ := h.ToHost(); hs[2] != gpu.Poison16 {
		t.Errorf("half poison %#x", hs[2])
	}
}

func TestLaunchAndLimits(t *testing.T) {
	s := open(t)
	m := kernels(t, s)
	k, err := m.Kernel("scale")
	if err != nil {
		t.Fatal(err)
	}
	if k.Attrs.Registers < 1 || k.Attrs.MaxThreadsPerBlock < 256 {
		t.Errorf("attributes %+v", k.Attrs)
	}
	x, _ := gpu.Upload(s, []float32{1, 2, 3})
	defer x.Free()
	if err := k.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(32)}, x, float32(2), int32(3)); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.ToHost(); got[0] != 2 || got[2] != 6 {
		t.Errorf("scale gave %v", got)
	}
	if err := k.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(2048)}, x, float32(2), int32(3)); err == nil {
		t.Error("a 2048-thread block launched")
	}
	if err := k.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(32)}, x, float32(2), 3); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("a Go int argument: %v", err)
	}
	if !labtest.UnderSanitizer() {
		if _, err := m.Kernel("nope"); err == nil || !strings.Contains(err.Error(), "extern") {
			t.Errorf("a missing kernel: %v", err)
		}
	}

	// Dynamic shared memory above the 48 KiB default needs the opt-in that Launch does.
	big, err := m.Kernel("big_smem")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := gpu.Alloc[float32](s, 1024)
	defer y.Free()
	if err := big.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(1024), SharedBytes: 64 << 10}, y); err != nil {
		t.Fatalf("64 KiB of dynamic shared memory: %v", err)
	}
	if got, _ := y.ToHost(); got[0] != 1023 {
		t.Errorf("big_smem gave %v", got[0])
	}
	occ, err := k.Occupancy(256, 0)
	if err != nil || occ.BlocksPerSM < 1 {
		t.Errorf("occupancy %+v %v", occ, err)
	}
	est := gpu.EstimateOccupancy(s.Device, k.Attrs, 256, 0)
	if est.BlocksPerSM != occ.BlocksPerSM {
		t.Errorf("estimated %d blocks per SM, the driver says %d", est.BlocksPerSM, occ.BlocksPerSM)
	}
}

func TestOutOfMemoryIsAClearError(t *testing.T) {
	if labtest.UnderSanitizer() {
		t.Skip("a failed allocation on purpose: compute-sanitizer would count it as an error")
	}
	s := open(t)
	_, err := gpu.Alloc[float32](s, int(s.Device.MemBytes)) // 4x the device's memory
	if err == nil || !strings.Contains(err.Error(), "free of") {
		t.Errorf("allocating 4x the memory: %v", err)
	}
}

func TestElapsed(t *testing.T) {
	s := open(t)
	b, _ := gpu.Alloc[uint32](s, 64<<20)
	defer b.Free()
	ms, err := s.Elapsed(b.Zero)
	if err != nil || ms <= 0 || ms > 1000 {
		t.Errorf("zeroing 256 MiB took %v ms (%v)", ms, err)
	}
}

// Occupancy with more than 48 KiB of dynamic shared memory needs the same opt-in as a launch.
func TestOccupancyWithLargeDynamicShared(t *testing.T) {
	s := open(t)
	big, err := kernels(t, s).Kernel("big_smem")
	if err != nil {
		t.Fatal(err)
	}
	occ, err := big.Occupancy(256, 100<<10)
	if err != nil || occ.BlocksPerSM < 1 || occ.Limiter != "shared memory" {
		t.Errorf("100 KiB of dynamic shared memory: %+v, %v", occ, err)
	}
}

// The package's part of the sanitizer pass (cmd/sanitize runs only the TestSanitize of each
// package): both test kernels on awkward launches, a partial block over a view one float into its
// buffer and a block of 1000 threads on 64 KiB of opted-in shared memory, each checked, then the
// session's launch records checked and written for the pass.
func TestSanitize(t *testing.T) {
	s := open(t)
	m := kernels(t, s)
	scale, err := m.Kernel("scale")
	if err != nil {
		t.Fatal(err)
	}
	host := make([]float32, 37)
	for i := range host {
		host[i] = float32(i + 1)
	}
	x, err := gpu.Upload(s, host)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	v, err := x.View(1, 36)
	if err != nil {
		t.Fatal(err)
	}
	if err := scale.Launch(gpu.Config{Grid: gpu.D1(2), Block: gpu.D1(32)}, v, float32(2), int32(35)); err != nil {
		t.Fatal(err)
	}
	got, err := x.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		want := host[i]
		if i >= 1 && i < 36 {
			want *= 2
		}
		if g != want {
			t.Errorf("scale on a view of [1, 36): x[%d] = %v, want %v", i, g, want)
		}
	}

	big, err := m.Kernel("big_smem")
	if err != nil {
		t.Fatal(err)
	}
	y, err := gpu.Alloc[float32](s, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Free()
	if err := y.Poison(); err != nil {
		t.Fatal(err)
	}
	if err := big.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(1000), SharedBytes: 64 << 10}, y); err != nil {
		t.Fatal(err)
	}
	ys, err := y.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range ys {
		if g != float32(999-i) {
			t.Fatalf("big_smem: y[%d] = %v, want %d", i, g, 999-i)
		}
	}

	want := []gpu.Launch{{Source: "scale.cu", Kernel: "big_smem", Count: 1}, {Source: "scale.cu", Kernel: "scale", Count: 1}}
	if got := s.Launches(); !slices.Equal(got, want) {
		t.Errorf("launch records %v, want %v", got, want)
	}
	if err := s.WriteLaunches(os.Getenv(gpu.LaunchRecordEnv)); err != nil {
		t.Error(err)
	}
}

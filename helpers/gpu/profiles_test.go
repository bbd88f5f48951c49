package gpu

import (
	"strings"
	"testing"
)

// h100 is the recorded GPU's DeviceInfo as the driver reported it (results/00_setup.json): its
// launch limits, clocks and name.
var h100 = DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, SMs: 132, ClockMHz: 1980, MemClockMHz: 2619,
	MemBusWidthBits: 5120, MemBytes: 85017493504, L2Bytes: 52428800, MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 2048,
	MaxBlocksPerSM: 32, MaxSharedPerBlock: 49152, MaxSharedPerBlockOptin: 232448, MaxSharedPerSM: 233472,
	RegsPerSM: 65536, WarpSize: 32, DriverVersion: 13000}

func TestProfilesAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Profiles {
		if seen[p.Key] {
			t.Errorf("profile key %q twice", p.Key)
		}
		seen[p.Key] = true
		if p.CC() < 75 || p.SMs < 1 || p.L2Bytes < 1<<20 || p.MemBytes < 1<<30 || p.BandwidthGBs <= 0 || p.FP32TFLOPS <= 0 || p.FP16TFLOPS <= 0 {
			t.Errorf("%s: a figure is missing: %+v", p.Key, p)
		}
		if p.MaxSharedPerBlock != 48<<10 || p.MaxSharedPerBlockOptin < p.MaxSharedPerBlock || p.MaxSharedPerSM < p.MaxSharedPerBlockOptin {
			t.Errorf("%s: shared memory limits out of order: %d default, %d opt-in, %d per SM", p.Key, p.MaxSharedPerBlock, p.MaxSharedPerBlockOptin, p.MaxSharedPerSM)
		}
		if (p.CC() >= 80) != (p.TF32TFLOPS > 0) || (p.CC() >= 80) != (p.BF16TFLOPS > 0) {
			t.Errorf("%s: TF32 and bfloat16 tensor cores exist from compute capability 8.0 on, and only there", p.Key)
		}
		if p.TF32TFLOPS > p.FP16TFLOPS {
			t.Errorf("%s: TF32 peak %.1f over the fp16 peak %.1f", p.Key, p.TF32TFLOPS, p.FP16TFLOPS)
		}
		if got, ok := ProfileOf(DeviceInfo{Name: p.Name}); !ok || got.Key != p.Key {
			t.Errorf("ProfileOf(%q) = %q, %v; want %q", p.Name, got.Key, ok, p.Key)
		}
	}
	for _, want := range []string{"t4", "a10", "rtx3090", "a100-40", "a100-80", "l4", "rtx4090", "h100-sxm", "h100-pcie", "h200", "b200", "rtx5090"} {
		if !seen[want] {
			t.Errorf("no profile %q", want)
		}
	}
}

func TestProfileOfDriverNames(t *testing.T) {
	cases := map[string]string{
		"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H100 PCIe": "h100-pcie", "NVIDIA H200": "h200",
		"Tesla T4": "t4", "NVIDIA A100-SXM4-80GB": "a100-80", "NVIDIA A100-SXM4-40GB": "a100-40",
		"NVIDIA A10": "a10", "NVIDIA L4": "l4", "NVIDIA GeForce RTX 4090": "rtx4090",
		"NVIDIA L40S": "", "NVIDIA A100X": "", "NVIDIA GeForce RTX 4080": "",
	}
	for name, want := range cases {
		p, ok := ProfileOf(DeviceInfo{Name: name})
		if got := p.Key; got != want || ok != (want != "") {
			t.Errorf("ProfileOf(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestLookupProfile(t *testing.T) {
	for key, want := range map[string]string{"t4": "t4", "T4": "t4", " h100 ": "h100-sxm", "a100": "a100-80", "rtx4090": "rtx4090"} {
		p, err := LookupProfile(key)
		if err != nil || p.Key != want {
			t.Errorf("LookupProfile(%q) = %q, %v; want %q", key, p.Key, err, want)
		}
	}
	_, err := LookupProfile("v100")
	if err == nil || !strings.Contains(err.Error(), `no GPU profile "v100"`) || !strings.Contains(err.Error(), "t4, a100-40") {
		t.Errorf("an unknown profile: want an error that lists the keys, got %v", err)
	}
	t.Setenv(EmulateEnv, "k80")
	if _, _, err := EmulatedProfile(); err == nil || !strings.Contains(err.Error(), "KERNELS_EMULATE=k80") {
		t.Errorf("KERNELS_EMULATE=k80: want an error naming the variable, got %v", err)
	}
	t.Setenv(EmulateEnv, "")
	if _, ok, err := EmulatedProfile(); ok || err != nil {
		t.Errorf("KERNELS_EMULATE empty: no emulation, got %v %v", ok, err)
	}
}

func TestEmulateTakesTheProfilesLimitsAndKeepsTheHostsRates(t *testing.T) {
	t4, _ := LookupProfile("t4")
	d, err := Emulate(h100, t4)
	if err != nil {
		t.Fatal(err)
	}
	if d.Major != 7 || d.Minor != 5 || d.Arch() != "compute_75" {
		t.Errorf("emulated T4: compute capability %s, arch %s", d.ComputeCapability(), d.Arch())
	}
	if d.SMs != 40 || d.L2Bytes != 4<<20 || d.MaxSharedPerBlockOptin != 64<<10 || d.MaxSharedPerSM != 64<<10 || d.MaxThreadsPerSM != 1024 || d.MaxBlocksPerSM != 16 {
		t.Errorf("emulated T4 limits: %+v", d)
	}
	if d.MemBytes != 16e9 {
		t.Errorf("emulated T4 memory %d, want the T4's 16 GB", d.MemBytes)
	}
	if !strings.Contains(d.Name, "NVIDIA T4 limits") || !strings.Contains(d.Name, "emulated on NVIDIA H100 80GB HBM3") {
		t.Errorf("the name must say both GPUs: %q", d.Name)
	}
	if d.Emulation == nil || d.Emulation.Profile != "t4" || d.Emulation.Host.Name != h100.Name {
		t.Errorf("emulation record: %+v", d.Emulation)
	}
	if d.PeakFP32GFLOPS() != h100.PeakFP32GFLOPS() || d.TheoreticalBandwidthGBs() != h100.TheoreticalBandwidthGBs() {
		t.Errorf("rates must be the host's (timings are): peak %.0f vs %.0f", d.PeakFP32GFLOPS(), h100.PeakFP32GFLOPS())
	}
	if p, ok := ProfileOf(d); !ok || p.Key != "h100-sxm" {
		t.Errorf("the datasheet of an emulating device is its host's: got %q", p.Key)
	}
	// Emulating again starts from the host, never from the emulated limits.
	a100, _ := LookupProfile("a100-80")
	d2, err := Emulate(d, a100)
	if err != nil || d2.SMs != 108 || d2.Emulation.Host.Name != h100.Name {
		t.Errorf("re-emulating: %v, %+v", err, d2)
	}
}

func TestEmulateRefusesANewerGPU(t *testing.T) {
	for _, key := range []string{"b200", "rtx5090"} {
		p, _ := LookupProfile(key)
		_, err := Emulate(h100, p)
		if err == nil {
			t.Fatalf("an H100 emulating %s: want an error", key)
		}
		for _, want := range []string{"cannot emulate " + p.Name, "compute capability " + p.ComputeCapability(), "up to 9.0", "t4", "h200"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	}
}

// A launch beyond the emulated GPU's limits is refused, though the host could run it.
func TestEmulatedLimitsRefuseLaunches(t *testing.T) {
	t4, _ := LookupProfile("t4")
	d, _ := Emulate(h100, t4)
	cfg := Config{Grid: D1(1), Block: D1(256), SharedBytes: 96 << 10}
	if err := CheckConfig(h100, KernelAttrs{}, cfg); err != nil {
		t.Fatalf("the H100 takes 96 KiB: %v", err)
	}
	err := CheckConfig(d, KernelAttrs{}, cfg)
	if err == nil || !strings.Contains(err.Error(), "over the device's limit of 65536") {
		t.Errorf("96 KiB on an emulated T4: want the shared memory limit, got %v", err)
	}
	occ := EstimateOccupancy(d, KernelAttrs{Registers: 32}, 256, 0)
	if occ.BlocksPerSM != 4 || occ.Limiter != "threads" {
		t.Errorf("T4 occupancy of 256-thread blocks: %+v, want 4 blocks limited by threads (1024 per SM)", occ)
	}
}

func TestTensorFormat(t *testing.T) {
	cases := map[string]string{"tf32": "tf32", "3xtf32": "tf32", "fp16x3": "fp16", "bf16x3": "bf16", "fp16": "fp16",
		"float32": "", "float16": "", "bfloat16": "", "half": "", "float16 (half accumulate)": ""}
	for dtype, want := range cases {
		if got := TensorFormat(dtype); got != want {
			t.Errorf("TensorFormat(%q) = %q, want %q", dtype, got, want)
		}
	}
	h, _ := LookupProfile("h100-sxm")
	t4, _ := LookupProfile("t4")
	if h.TensorPeakTFLOPS("tf32") != 494.7 || h.TensorPeakTFLOPS("fp16x3") != 989.4 || t4.TensorPeakTFLOPS("tf32") != 0 || h.TensorPeakTFLOPS("float32") != 0 {
		t.Error("TensorPeakTFLOPS picks the wrong figure")
	}
}

package gpu

import (
	"fmt"
	"strings"
)

// Profile is a real GPU that readers have, as data: its compute capability and the per-block and
// per-SM limits that decide which steps run (from the CUDA programming guide's table of the compute
// capability), its size (SMs, L2, memory) and its peaks. The peaks and sizes are vendor datasheet
// figures, dense (no structured sparsity), tensor peaks with float32 accumulation (what the
// lessons' kernels do; GeForce parts run fp16 with float32 accumulation at half their fp16-accumulate
// rate): they give each measurement a ceiling, and are never measurements themselves.
type Profile struct {
	Key     string   // the name KERNELS_EMULATE takes: "t4", "a100-80", "h100-sxm"
	Name    string   // the product, "NVIDIA T4"
	Matches []string // substrings of the driver's device name that identify it ("T4")
	Major   int
	Minor   int

	SMs                    int
	MaxSharedPerBlock      int // without opting in: 48 KiB on every GPU here
	MaxSharedPerBlockOptin int
	MaxSharedPerSM         int
	L2Bytes                int
	RegsPerSM              int
	MaxThreadsPerSM        int
	MaxBlocksPerSM         int
	MemBytes               int64

	BandwidthGBs float64 // DRAM bandwidth, datasheet
	FP32TFLOPS   float64 // CUDA cores, datasheet
	TF32TFLOPS   float64 // tensor cores, dense; 0 where the GPU has no TF32
	FP16TFLOPS   float64 // tensor cores, dense, float32 accumulation
	BF16TFLOPS   float64 // tensor cores, dense, float32 accumulation; 0 where the GPU has no bfloat16
	Note         string  // what is special or uncertain about the figures
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = int64(1) << 30
	gb  = int64(1e9)
)

// Per compute capability (CUDA programming guide): shared memory per block with opt-in and per SM,
// resident threads and blocks per SM. 64 Ki registers per SM and 48 KiB of shared memory per block
// without opting in on all of them.
func cc75(p Profile) Profile { return withLimits(p, 7, 5, 64*kib, 64*kib, 1024, 16) }
func cc80(p Profile) Profile { return withLimits(p, 8, 0, 163*kib, 164*kib, 2048, 32) }
func cc86(p Profile) Profile { return withLimits(p, 8, 6, 99*kib, 100*kib, 1536, 16) }
func cc89(p Profile) Profile { return withLimits(p, 8, 9, 99*kib, 100*kib, 1536, 24) }
func cc90(p Profile) Profile { return withLimits(p, 9, 0, 227*kib, 228*kib, 2048, 32) }
func cc100(p Profile) Profile {
	return withLimits(p, 10, 0, 227*kib, 228*kib, 2048, 32)
}
func cc120(p Profile) Profile { return withLimits(p, 12, 0, 99*kib, 100*kib, 1536, 32) }

func withLimits(p Profile, major, minor, optin, perSM, threads, blocks int) Profile {
	p.Major, p.Minor = major, minor
	p.MaxSharedPerBlock, p.MaxSharedPerBlockOptin, p.MaxSharedPerSM = 48*kib, optin, perSM
	p.RegsPerSM, p.MaxThreadsPerSM, p.MaxBlocksPerSM = 64*kib, threads, blocks
	return p
}

// Profiles are the GPUs the suite knows, oldest architecture first.
var Profiles = []Profile{
	cc75(Profile{Key: "t4", Name: "NVIDIA T4", Matches: []string{"T4"}, SMs: 40, L2Bytes: 4 * mib, MemBytes: 16 * gb,
		BandwidthGBs: 320, FP32TFLOPS: 8.1, FP16TFLOPS: 65,
		Note: "Turing: no TF32, no bfloat16 tensor cores, no cp.async; the free Colab GPU"}),
	cc80(Profile{Key: "a100-40", Name: "NVIDIA A100 40GB (SXM)", Matches: []string{"A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB"}, SMs: 108, L2Bytes: 40 * mib, MemBytes: 40 * gb,
		BandwidthGBs: 1555, FP32TFLOPS: 19.5, TF32TFLOPS: 156, FP16TFLOPS: 312, BF16TFLOPS: 312}),
	cc80(Profile{Key: "a100-80", Name: "NVIDIA A100 80GB (SXM)", Matches: []string{"A100-SXM4-80GB", "A100 80GB", "A100-PCIE-80GB"}, SMs: 108, L2Bytes: 40 * mib, MemBytes: 80 * gb,
		BandwidthGBs: 2039, FP32TFLOPS: 19.5, TF32TFLOPS: 156, FP16TFLOPS: 312, BF16TFLOPS: 312,
		Note: "the PCIe card has 1935 GB/s"}),
	cc86(Profile{Key: "a10", Name: "NVIDIA A10", Matches: []string{"A10"}, SMs: 72, L2Bytes: 6 * mib, MemBytes: 24 * gb,
		BandwidthGBs: 600, FP32TFLOPS: 31.2, TF32TFLOPS: 62.5, FP16TFLOPS: 125, BF16TFLOPS: 125}),
	cc86(Profile{Key: "rtx3090", Name: "NVIDIA GeForce RTX 3090", Matches: []string{"RTX 3090"}, SMs: 82, L2Bytes: 6 * mib, MemBytes: 24 * gb,
		BandwidthGBs: 936, FP32TFLOPS: 35.6, TF32TFLOPS: 35.6, FP16TFLOPS: 71, BF16TFLOPS: 71,
		Note: "GeForce: tensor cores at half rate with float32 accumulation (fp16 accumulation: 142)"}),
	cc89(Profile{Key: "l4", Name: "NVIDIA L4", Matches: []string{"L4"}, SMs: 58, L2Bytes: 48 * mib, MemBytes: 24 * gb,
		BandwidthGBs: 300, FP32TFLOPS: 30.3, TF32TFLOPS: 60, FP16TFLOPS: 121, BF16TFLOPS: 121,
		Note: "the GIoU article's GPU"}),
	cc89(Profile{Key: "rtx4090", Name: "NVIDIA GeForce RTX 4090", Matches: []string{"RTX 4090"}, SMs: 128, L2Bytes: 72 * mib, MemBytes: 24 * gb,
		BandwidthGBs: 1008, FP32TFLOPS: 82.6, TF32TFLOPS: 82.6, FP16TFLOPS: 165.2, BF16TFLOPS: 165.2,
		Note: "GeForce: tensor cores at half rate with float32 accumulation (fp16 accumulation: 330.3)"}),
	cc90(Profile{Key: "h100-pcie", Name: "NVIDIA H100 PCIe", Matches: []string{"H100 PCIe"}, SMs: 114, L2Bytes: 50 * mib, MemBytes: 80 * gb,
		BandwidthGBs: 2000, FP32TFLOPS: 51, TF32TFLOPS: 378, FP16TFLOPS: 756, BF16TFLOPS: 756}),
	cc90(Profile{Key: "h100-sxm", Name: "NVIDIA H100 SXM", Matches: []string{"H100 80GB HBM3", "H100 SXM"}, SMs: 132, L2Bytes: 50 * mib, MemBytes: 80 * gb,
		BandwidthGBs: 3350, FP32TFLOPS: 67, TF32TFLOPS: 494.7, FP16TFLOPS: 989.4, BF16TFLOPS: 989.4,
		Note: "the second recorded machine (results/h100/)"}),
	cc90(Profile{Key: "h200", Name: "NVIDIA H200", Matches: []string{"H200"}, SMs: 132, L2Bytes: 60 * mib, MemBytes: 141 * gb,
		BandwidthGBs: 4800, FP32TFLOPS: 67, TF32TFLOPS: 494.7, FP16TFLOPS: 989.4, BF16TFLOPS: 989.4,
		Note: "the GPU the recorded results come from: an H100 with more and faster memory; L2 as the GPU reports it (the datasheet gives none)"}),
	cc100(Profile{Key: "b200", Name: "NVIDIA B200", Matches: []string{"B200"}, SMs: 148, L2Bytes: 126 * mib, MemBytes: 180 * gb,
		BandwidthGBs: 8000, FP32TFLOPS: 80, TF32TFLOPS: 1100, FP16TFLOPS: 2250, BF16TFLOPS: 2250,
		Note: "datasheet figures of an HGX B200 per GPU; SM count and L2 from public reviews, not the datasheet"}),
	cc120(Profile{Key: "rtx5090", Name: "NVIDIA GeForce RTX 5090", Matches: []string{"RTX 5090"}, SMs: 170, L2Bytes: 96 * mib, MemBytes: 32 * gb,
		BandwidthGBs: 1792, FP32TFLOPS: 104.8, TF32TFLOPS: 104.8, FP16TFLOPS: 209.5, BF16TFLOPS: 209.5,
		Note: "Blackwell consumer part: no wgmma, no TMA multicast; GeForce tensor rates with float32 accumulation"}),
}

// ProfileKeys lists the keys KERNELS_EMULATE takes.
func ProfileKeys() []string {
	keys := make([]string, len(Profiles))
	for i, p := range Profiles {
		keys[i] = p.Key
	}
	return keys
}

// LookupProfile finds a profile by its key (case does not matter; "h100" means "h100-sxm", "a100"
// means "a100-80"), with an error that lists the keys.
func LookupProfile(key string) (Profile, error) {
	k := strings.ToLower(strings.TrimSpace(key))
	switch k {
	case "h100":
		k = "h100-sxm"
	case "a100":
		k = "a100-80"
	}
	for _, p := range Profiles {
		if p.Key == k {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("no GPU profile %q: the profiles are %s", key, strings.Join(ProfileKeys(), ", "))
}

// ProfileOf finds the profile of a device from the name the driver gives it (for its datasheet
// peaks); ok is false for a GPU the table does not know. An emulating device is matched by its host.
func ProfileOf(d DeviceInfo) (Profile, bool) {
	name := d.Hardware().Name
	for _, p := range Profiles {
		for _, m := range p.Matches {
			// "A10" is in "A100" and "L4" in "L40S": a match must not be the start of a longer model number.
			if i := strings.Index(name, m); i >= 0 && !followedByDigit(name, i+len(m)) {
				return p, true
			}
		}
	}
	return Profile{}, false
}

// followedByDigit reports whether s has a digit at i.
func followedByDigit(s string, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

// CC is the profile's compute capability times ten: 75 for 7.5.
func (p Profile) CC() int { return 10*p.Major + p.Minor }

// ComputeCapability is the profile's compute capability as "7.5".
func (p Profile) ComputeCapability() string { return fmt.Sprintf("%d.%d", p.Major, p.Minor) }

// Device is the profile as the DeviceInfo a plan sees: its limits, with the clocks left zero (the
// profile's peaks are datasheet figures, not derived from a clock).
func (p Profile) Device() DeviceInfo {
	return DeviceInfo{
		Name: p.Name, Major: p.Major, Minor: p.Minor, SMs: p.SMs, MemBytes: p.MemBytes, L2Bytes: p.L2Bytes,
		MaxThreadsPerBlock: 1024, MaxThreadsPerSM: p.MaxThreadsPerSM, MaxBlocksPerSM: p.MaxBlocksPerSM,
		MaxSharedPerBlock: p.MaxSharedPerBlock, MaxSharedPerBlockOptin: p.MaxSharedPerBlockOptin,
		MaxSharedPerSM: p.MaxSharedPerSM, RegsPerSM: p.RegsPerSM, WarpSize: 32,
	}
}

// TensorPeakTFLOPS is the datasheet tensor-core peak for products in format dtype ("tf32", "fp16",
// "bf16", or a split of one: "3xtf32", "fp16x3", "bf16x3" run on the same units); 0 when the GPU has
// no such tensor cores or dtype is not a tensor-core format.
func (p Profile) TensorPeakTFLOPS(dtype string) float64 {
	switch TensorFormat(dtype) {
	case "tf32":
		return p.TF32TFLOPS
	case "fp16":
		return p.FP16TFLOPS
	case "bf16":
		return p.BF16TFLOPS
	}
	return 0
}

// TensorFormat is the tensor-core input format of a record's dtype: "tf32", "fp16" or "bf16" for the
// formats and their splits ("3xtf32", "fp16x3", "bf16x3"), "" for anything that runs on the CUDA
// cores (float32, half and bfloat16 storage with float arithmetic).
func TensorFormat(dtype string) string {
	d := strings.ToLower(dtype)
	switch {
	case strings.Contains(d, "tf32"):
		return "tf32"
	case d == "fp16" || strings.HasPrefix(d, "fp16x") || strings.HasPrefix(d, "fp16 tensor"):
		return "fp16"
	case d == "bf16" || strings.HasPrefix(d, "bf16x") || strings.HasPrefix(d, "bf16 tensor"):
		return "bf16"
	}
	return ""
}

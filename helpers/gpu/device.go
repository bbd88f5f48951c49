package gpu

import (
	"errors"
	"fmt"
)

// ErrNoGPU is returned by Open when no GPU can be used: the nocuda build, or no device answering.
var ErrNoGPU = errors.New("no CUDA GPU")

// DeviceInfo holds the facts about a device that lessons use to reason about limits and peaks.
type DeviceInfo struct {
	Name                   string `json:"name"`
	Ordinal                int    `json:"ordinal"`
	Major                  int    `json:"cc_major"`
	Minor                  int    `json:"cc_minor"`
	SMs                    int    `json:"sms"`
	ClockMHz               int    `json:"clock_mhz"`
	MemClockMHz            int    `json:"mem_clock_mhz"`
	MemBusWidthBits        int    `json:"mem_bus_width_bits"`
	MemBytes               int64  `json:"mem_bytes"`
	L2Bytes                int    `json:"l2_bytes"`
	MaxThreadsPerBlock     int    `json:"max_threads_per_block"`
	MaxThreadsPerSM        int    `json:"max_threads_per_sm"`
	MaxBlocksPerSM         int    `json:"max_blocks_per_sm"`
	MaxSharedPerBlock      int    `json:"max_shared_per_block"`
	MaxSharedPerBlockOptin int    `json:"max_shared_per_block_optin"`
	MaxSharedPerSM         int    `json:"max_shared_per_sm"`
	RegsPerSM              int    `json:"regs_per_sm"`
	WarpSize               int    `json:"warp_size"`
	DriverVersion          int    `json:"driver_version"` // CUDA driver API version, 13000 for 13.0
	// Emulation is set when the limits above are a profile's (KERNELS_EMULATE), not the GPU's own:
	// the kernels run, and are timed, on the host it names.
	Emulation *Emulation `json:"emulation,omitempty"`
}

// Arch is the NVRTC virtual architecture for the device, for example "compute_90".
func (d DeviceInfo) Arch() string { return fmt.Sprintf("compute_%d%d", d.Major, d.Minor) }

// ComputeCapability is the device's compute capability as "9.0".
func (d DeviceInfo) ComputeCapability() string { return fmt.Sprintf("%d.%d", d.Major, d.Minor) }

// Driver is the CUDA version the driver supports, as "13.0".
func (d DeviceInfo) Driver() string {
	return fmt.Sprintf("%d.%d", d.DriverVersion/1000, (d.DriverVersion%1000)/10)
}

// FP32LanesPerSM is the number of FP32 FMA units per SM for the device's architecture.
func (d DeviceInfo) FP32LanesPerSM() int {
	switch {
	case d.Major <= 5:
		return 128
	case d.Major == 6 && d.Minor == 0:
		return 64
	case d.Major == 6:
		return 128
	case d.Major == 7:
		return 64
	case d.Major == 8 && d.Minor == 0:
		return 64
	default: // 8.6, 8.9, 9.0, 10.x, 12.x
		return 128
	}
}

// Hardware is the GPU that runs the kernels: the host of an emulation, or d itself. Rates (peaks,
// bandwidth) come from it, since every timing is the host's.
func (d DeviceInfo) Hardware() DeviceInfo {
	if d.Emulation != nil {
		return d.Emulation.Host
	}
	return d
}

// PeakFP32GFLOPS is the FP32 peak from device attributes: SMs x FMA lanes x 2 FLOPs x clock, of the
// hardware (an emulation's host). The clock is the one the driver reports (the boost clock); a
// throttled GPU runs below it.
func (d DeviceInfo) PeakFP32GFLOPS() float64 {
	h := d.Hardware()
	return float64(h.SMs*h.FP32LanesPerSM()*2) * float64(h.ClockMHz) / 1e3
}

// TheoreticalBandwidthGBs is the DRAM bandwidth from the memory clock and bus width (double data
// rate) of the hardware. Lessons compare against the measured copy bandwidth instead; this is for
// context.
func (d DeviceInfo) TheoreticalBandwidthGBs() float64 {
	h := d.Hardware()
	return 2 * float64(h.MemClockMHz) * 1e6 * float64(h.MemBusWidthBits/8) / 1e9
}

// CC is the compute capability times ten: 90 for 9.0.
func (d DeviceInfo) CC() int { return 10*d.Major + d.Minor }

// String is a one-line summary of the device.
func (d DeviceInfo) String() string {
	return fmt.Sprintf("%s (cc %s, %d SMs, %.1f GiB, L2 %d MiB, driver CUDA %s)",
		d.Name, d.ComputeCapability(), d.SMs, float64(d.MemBytes)/(1<<30), d.L2Bytes>>20, d.Driver())
}

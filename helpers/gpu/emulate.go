package gpu

import (
	"fmt"
	"os"
	"strings"
)

// EmulateEnv is the environment variable that makes the whole suite behave as on another GPU:
// KERNELS_EMULATE=t4 (any profile key). Kernels are compiled for the profile's compute capability
// (PTX for an older architecture runs on a newer GPU), plans and launches see the profile's limits
// (shared memory, SMs, L2, threads and blocks per SM), and a launch beyond them is an error. The
// timings stay the host's, and every name says so.
const EmulateEnv = "KERNELS_EMULATE"

// Emulation says which profile a device's limits come from and which GPU really runs the kernels.
type Emulation struct {
	Profile string     `json:"profile"` // the profile's key, "t4"
	Host    DeviceInfo `json:"host"`    // the GPU that runs and times the kernels
}

// EmulatedProfile is the profile KERNELS_EMULATE names; ok is false when it is unset or empty.
func EmulatedProfile() (p Profile, ok bool, err error) {
	key := os.Getenv(EmulateEnv)
	if key == "" {
		return Profile{}, false, nil
	}
	p, err = LookupProfile(key)
	if err != nil {
		return Profile{}, false, fmt.Errorf("%s=%s: %w", EmulateEnv, key, err)
	}
	return p, true, nil
}

// Emulate is host as a GPU of profile p: p's compute capability and limits (each at most the
// host's, since nothing can run beyond what the host has), the host's clocks and driver. Its name
// says both, "NVIDIA T4 limits, emulated on NVIDIA H100 80GB HBM3", so that every table, chart and
// receipt made from it says so. A host cannot emulate a newer compute capability than its own: PTX
// for a newer architecture does not load on an older GPU.
func Emulate(host DeviceInfo, p Profile) (DeviceInfo, error) {
	if host.Emulation != nil {
		host = host.Emulation.Host
	}
	if p.CC() > host.CC() {
		return DeviceInfo{}, fmt.Errorf("%s=%s: %s (compute capability %s) cannot emulate %s (compute capability %s): kernels compiled for a newer architecture do not run on an older GPU. It can emulate profiles up to %s: %s",
			EmulateEnv, p.Key, host.Name, host.ComputeCapability(), p.Name, p.ComputeCapability(), host.ComputeCapability(), emulatable(host))
	}
	d := p.Device()
	d.Name = fmt.Sprintf("%s limits, emulated on %s", p.Name, host.Name)
	d.Ordinal, d.DriverVersion = host.Ordinal, host.DriverVersion
	d.ClockMHz, d.MemClockMHz, d.MemBusWidthBits = host.ClockMHz, host.MemClockMHz, host.MemBusWidthBits
	d.SMs = min(d.SMs, host.SMs)
	d.MemBytes = min(d.MemBytes, host.MemBytes)
	d.L2Bytes = min(d.L2Bytes, host.L2Bytes)
	d.MaxThreadsPerBlock = min(d.MaxThreadsPerBlock, host.MaxThreadsPerBlock)
	d.MaxThreadsPerSM = min(d.MaxThreadsPerSM, host.MaxThreadsPerSM)
	d.MaxBlocksPerSM = min(d.MaxBlocksPerSM, host.MaxBlocksPerSM)
	d.MaxSharedPerBlock = min(d.MaxSharedPerBlock, host.MaxSharedPerBlock)
	d.MaxSharedPerBlockOptin = min(d.MaxSharedPerBlockOptin, host.MaxSharedPerBlockOptin)
	d.MaxSharedPerSM = min(d.MaxSharedPerSM, host.MaxSharedPerSM)
	d.RegsPerSM = min(d.RegsPerSM, host.RegsPerSM)
	d.Emulation = &Emulation{Profile: p.Key, Host: host}
	return d, nil
}

// emulatable lists the keys of the profiles host can emulate.
func emulatable(host DeviceInfo) string {
	var keys []string
	for _, p := range Profiles {
		if p.CC() <= host.CC() {
			keys = append(keys, p.Key)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

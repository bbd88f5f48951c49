package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/classroom"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
)

// Cell is how a notebook cell uses the lab: it opens the env, runs body, shows any error (a compile
// error with its source lines) instead of crashing the cell, and closes the env. Each GoNB cell is a
// new process, so each opens its own env; the copy bandwidth and compiled PTX come from disk caches.
//
// Jupyter's interrupt (SIGINT, which GoNB forwards to the cell's process) or a SIGTERM ends the
// process at once, even while it waits on a kernel that never ends, and the driver frees the GPU.
func Cell(body func(env *Env) error) {
	defer show.Flush()
	defer watchdog.OnInterrupt(interrupted)()
	env, err := Open()
	if err != nil {
		show.Error(err)
		return
	}
	defer env.Close()
	if err := body(env); err != nil {
		if IsRefusal(err) {
			ShowRefusal(err) // a step this GPU cannot run: a note naming the need, not an error
			return
		}
		show.Error(err)
	}
}

// Doctor is the setup check: is there a GPU, which driver, which CUDA headers cgo built against and
// which NVRTC compiles the kernels (they may come from different CUDA versions: .ci/env.sh picks
// them), which architecture kernels compile for, which mode runs and why; on the classroom hub, the
// student's seat (their device, and who shares it).
func Doctor(env *Env) show.Table {
	t := show.Table{Title: "Doctor", Header: []string{"check", "finding"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("mode", env.Mode.String())
	if seat := os.Getenv(classroom.SeatEnv); seat != "" {
		add("seat", seat) // set by the classroom hub: which device this student has, and who shares it
	}
	if env.GPU() {
		d := env.Receipt.Device
		add("GPU", d.String())
		add("compute capability", d.ComputeCapability())
		add("driver", fmt.Sprintf("%s, CUDA %s", env.Receipt.DriverRelease, env.Receipt.CUDADriver))
		add("SMs, clock", fmt.Sprintf("%d SMs at %d MHz: FP32 peak %.1f TFLOP/s", d.SMs, d.ClockMHz, env.Receipt.PeakFP32()))
		add("memory", fmt.Sprintf("%.1f GiB, %d-bit bus at %d MHz: %.0f GB/s on paper, %.0f GB/s measured (device copy)",
			float64(d.MemBytes)/(1<<30), d.MemBusWidthBits, d.MemClockMHz, d.TheoreticalBandwidthGBs(), env.Receipt.CopyGBps))
		add("L2, shared memory", fmt.Sprintf("L2 %d MiB; shared memory %d KiB per block (%d KiB opt-in), %d KiB per SM",
			d.L2Bytes>>20, d.MaxSharedPerBlock>>10, d.MaxSharedPerBlockOptin>>10, d.MaxSharedPerSM>>10))
		add("cgo headers", "CUDA "+env.Receipt.CUDAHeaders+"'s cuda.h (gorgonia.org/cu builds against 11.x/12.x headers and runs on newer drivers)")
		add("datasheet", datasheet(d))
	} else {
		add("why", env.Why.Error())
		if out, err := exec.Command("nvidia-smi", "-L").CombinedOutput(); err == nil {
			add("nvidia-smi", strings.TrimSpace(string(out))+" — a GPU is present: start the notebooks without the nocuda tag (make notebooks picks it)")
		} else {
			add("nvidia-smi", "not found or no GPU answered")
		}
		if env.Receipt.Device.Name != "" {
			add("recorded results", fmt.Sprintf("%s, driver %s, measured %s", env.Receipt.Device.Hardware().Name, env.Receipt.DriverRelease, dateOf(env.Receipt.Date)))
		}
		if v := os.Getenv("KERNELS_CGO_CUDA"); v != "" {
			add("cgo headers", "CUDA "+v+"'s cuda.h for the GPU build (picked by .ci/env.sh; this no-GPU build does not use it)")
		}
	}
	if em := env.Device().Emulation; em != nil {
		add("emulating", fmt.Sprintf("%s=%s: the %s's compute capability (%s) and limits (%d SMs, %d KiB of shared memory per block, %d MiB of L2) on the %s; every time is the %s's",
			gpu.EmulateEnv, em.Profile, em.Profile, env.Device().ComputeCapability(), env.Device().SMs, env.Device().MaxSharedPerBlockOptin>>10, env.Device().L2Bytes>>20, em.Host.Name, em.Host.Name))
	} else {
		add("emulating", fmt.Sprintf("no (set %s to one of %s to run the suite as on that GPU)", gpu.EmulateEnv, strings.Join(gpu.ProfileKeys(), ", ")))
	}
	nvrtc := "NVRTC " + env.Receipt.NVRTC
	if lib := compile.Library(); lib != "" {
		nvrtc += ", loaded from " + homeRelative(lib)
	}
	add("NVRTC", nvrtc)
	if err := compile.CheckArch(env.Arch()); err != nil {
		add("kernels compile for", err.Error())
	} else if archs, err := compile.SupportedArchs(); err == nil {
		add("kernels compile for", fmt.Sprintf("%s (NVRTC %s targets compute_%d to compute_%d)", env.Arch(), env.Receipt.NVRTC, archs[0], archs[len(archs)-1]))
	}
	if inc, err := compile.IncludeDir(); err == nil {
		add("CUDA headers for NVRTC", homeRelative(inc))
	} else {
		add("CUDA headers for NVRTC", err.Error())
	}
	if dir, err := compile.CacheDir(); err == nil {
		add("PTX cache", cacheShown(dir))
	}
	return t
}

// datasheet is the row of the GPU's datasheet peaks, from its profile when the table knows it.
func datasheet(d gpu.DeviceInfo) string {
	p, ok := gpu.ProfileOf(d)
	if !ok {
		return "this GPU is not in the profile table (helpers/gpu/profiles.go): tensor-core steps are shown without a tensor peak"
	}
	tc := func(v float64) string {
		if v == 0 {
			return "none"
		}
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%s: %.0f GB/s, FP32 %g TFLOP/s, tensor cores TF32 %s, FP16 %s, BF16 %s TFLOP/s (dense, vendor figures: ceilings, not measurements)",
		p.Name, p.BandwidthGBs, p.FP32TFLOPS, tc(p.TF32TFLOPS), tc(p.FP16TFLOPS), tc(p.BF16TFLOPS))
}

// cacheShown is how the doctor names the PTX cache: under $KERNELS_CACHE_DIR when that is set
// (a folder of this run's choosing, named by the variable rather than by the machine's path), else
// home-relative.
func cacheShown(dir string) string {
	if d := os.Getenv("KERNELS_CACHE_DIR"); d != "" {
		if rel, err := filepath.Rel(d, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join("$KERNELS_CACHE_DIR", rel)
		}
	}
	return homeRelative(dir)
}

// homeRelative writes a path under the home folder as ~/..., so that outputs name no user's folder.
func homeRelative(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return path
	}
	if rel, err := filepath.Rel(home, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.Join("~", rel)
	}
	return path
}

//go:build !nocuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
static CUresult setMaxDynShared(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}
static CUresult allowLargeClusters(CUfunction f) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
}
// maxActiveClusters asks how many clusters of a kernel compiled with __cluster_dims__ can run at
// once with grid blocks of block threads and smem bytes of dynamic shared memory.
static CUresult maxActiveClusters(CUfunction f, unsigned grid, unsigned block, unsigned smem, int *n) {
	CUlaunchConfig cfg = {0};
	cfg.gridDimX = grid; cfg.gridDimY = 1; cfg.gridDimZ = 1;
	cfg.blockDimX = block; cfg.blockDimY = 1; cfg.blockDimZ = 1;
	cfg.sharedMemBytes = smem;
	return cuOccupancyMaxActiveClusters(n, f, &cfg);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"
)

// The context is the device's primary context, made current on the calling OS thread at every
// entry (CUDA contexts are per thread and Go moves goroutines between threads), with the thread
// locked for the duration of the call.
type driver struct {
	dev cu.Device
	ctx cu.CUContext
}

type (
	module   = cu.Module
	function = cu.Function
	event    = cu.Event
)

func (d *driver) enter() error {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("making the CUDA context current: %w", err)
	}
	return nil
}

func (d *driver) leave() { runtime.UnlockOSThread() }

func (d *driver) do(f func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return f()
}

func openDriver(ordinal int) (*driver, DeviceInfo, error) {
	var info DeviceInfo
	n, err := cu.NumDevices()
	if err != nil {
		return nil, info, fmt.Errorf("%w: counting devices: %v", ErrNoGPU, err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, info, fmt.Errorf("%w: device %d asked for, %d present", ErrNoGPU, ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, info, fmt.Errorf("getting device %d: %w", ordinal, err)
	}
	info, err = deviceInfo(dev, ordinal)
	if err != nil {
		return nil, info, err
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, info, fmt.Errorf("retaining the primary context of %s: %w", info.Name, err)
	}
	return &driver{dev: dev, ctx: ctx}, info, nil
}

func deviceInfo(dev cu.Device, ordinal int) (DeviceInfo, error) {
	name, err := dev.Name()
	if err != nil {
		return DeviceInfo{}, fmt.Errorf("reading the device name: %w", err)
	}
	mem, err := dev.TotalMem()
	if err != nil {
		return DeviceInfo{}, fmt.Errorf("reading the memory size: %w", err)
	}
	info := DeviceInfo{Name: name, Ordinal: ordinal, MemBytes: mem, DriverVersion: cu.Version()}
	attrs := []struct {
		a   cu.DeviceAttribute
		dst *int
		div int
	}{
		{cu.ComputeCapabilityMajor, &info.Major, 1},
		{cu.ComputeCapabilityMinor, &info.Minor, 1},
		{cu.MultiprocessorCount, &info.SMs, 1},
		{cu.ClockRate, &info.ClockMHz, 1000},
		{cu.MemoryClockRate, &info.MemClockMHz, 1000},
		{cu.GlobalMemoryBusWidth, &info.MemBusWidthBits, 1},
		{cu.L2CacheSize, &info.L2Bytes, 1},
		{cu.MaxThreadsPerBlock, &info.MaxThreadsPerBlock, 1},
		{cu.MaxThreadsPerMultiprocessor, &info.MaxThreadsPerSM, 1},
		{cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR), &info.MaxBlocksPerSM, 1},
		{cu.MaxSharedMemoryPerBlock, &info.MaxSharedPerBlock, 1},
		{cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), &info.MaxSharedPerBlockOptin, 1},
		{cu.MaxSharedMemoryPerMultiprocessor, &info.MaxSharedPerSM, 1},
		{cu.MaxRegistersPerMultiprocessor, &info.RegsPerSM, 1},
		{cu.WarpSize, &info.WarpSize, 1},
	}
	for _, at := range attrs {
		v, err := dev.Attribute(at.a)
		if err != nil {
			return info, fmt.Errorf("reading device attribute %d: %w", at.a, err)
		}
		*at.dst = v / at.div
	}
	return info, nil
}

func (d *driver) close() error {
	return d.dev.ReleasePrimaryCtx()
}

func (d *driver) synchronize() error { return d.do(cu.Synchronize) }

func (d *driver) memInfo() (free, total int64, err error) {
	err = d.do(func() error { free, total, err = cu.MemInfo(); return err })
	return
}

func (d *driver) alloc(bytes int64) (p uintptr, err error) {
	err = d.do(func() error {
		ptr, err := cu.MemAlloc(bytes)
		p = uintptr(ptr)
		return err
	})
	return
}

func (d *driver) free(p uintptr) error {
	return d.do(func() error { return cu.MemFree(cu.DevicePtr(p)) })
}

func (d *driver) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	return d.do(func() error { return cu.MemcpyHtoD(cu.DevicePtr(dst), src, bytes) })
}

func (d *driver) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	return d.do(func() error { return cu.MemcpyDtoH(dst, cu.DevicePtr(src), bytes) })
}

func (d *driver) dtod(dst, src uintptr, bytes int64) error {
	return d.do(func() error { return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), bytes, cu.Stream{}) })
}

func (d *driver) memset8(p uintptr, v byte, n int64) error {
	return d.do(func() error { return cu.MemsetD8Async(cu.DevicePtr(p), v, n, cu.Stream{}) })
}

func (d *driver) memset16(p uintptr, v uint16, n int64) error {
	return d.do(func() error { return cu.MemsetD16Async(cu.DevicePtr(p), v, n, cu.Stream{}) })
}

func (d *driver) memset32(p uintptr, v uint32, n int64) error {
	return d.do(func() error { return cu.MemsetD32Async(cu.DevicePtr(p), uint(v), n, cu.Stream{}) })
}

func (d *driver) load(ptx string) (m module, err error) {
	err = d.do(func() error { m, err = cu.LoadData(ptx); return err })
	return
}

func (d *driver) function(m module, name string) (f function, err error) {
	err = d.do(func() error { f, err = m.Function(name); return err })
	return
}

func (d *driver) attrs(f function) (a KernelAttrs, err error) {
	err = d.do(func() error {
		for _, at := range []struct {
			a   cu.FunctionAttribute
			dst *int
		}{
			{cu.NumRegs, &a.Registers},
			{cu.SharedSizeBytes, &a.StaticSharedBytes},
			{cu.LocalSizeBytes, &a.LocalBytes},
			{cu.FnMaxThreadsPerBlock, &a.MaxThreadsPerBlock},
		} {
			v, err := f.Attribute(at.a)
			if err != nil {
				return err
			}
			*at.dst = v
		}
		return nil
	})
	return
}

func (d *driver) occupancy(f function, block, smem int) (n int, err error) {
	err = d.do(func() error { n, err = f.MaxActiveBlocksPerMultiProcessor(block, int64(smem)); return err })
	return
}

func (d *driver) setMaxDynamicShared(f function, bytes int) error {
	return d.do(func() error {
		cf := *(*C.CUfunction)(unsafe.Pointer(&f))
		if r := C.setMaxDynShared(cf, C.int(bytes)); r != C.CUDA_SUCCESS {
			return fmt.Errorf("cuFuncSetAttribute: CUresult %d", int(r))
		}
		return nil
	})
}

func (d *driver) allowLargeClusters(f function) error {
	return d.do(func() error {
		cf := *(*C.CUfunction)(unsafe.Pointer(&f))
		if r := C.allowLargeClusters(cf); r != C.CUDA_SUCCESS {
			return fmt.Errorf("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED): CUresult %d", int(r))
		}
		return nil
	})
}

func (d *driver) maxActiveClusters(f function, grid, block, smem int) (n int, err error) {
	err = d.do(func() error {
		cf := *(*C.CUfunction)(unsafe.Pointer(&f))
		var c C.int
		if r := C.maxActiveClusters(cf, C.uint(grid), C.uint(block), C.uint(smem), &c); r != C.CUDA_SUCCESS {
			return fmt.Errorf("cuOccupancyMaxActiveClusters: CUresult %d", int(r))
		}
		n = int(c)
		return nil
	})
	return
}

func (d *driver) launch(f function, cfg Config, words []uint64) error {
	params := make([]unsafe.Pointer, len(words))
	for i := range words {
		params[i] = unsafe.Pointer(&words[i])
	}
	return d.do(func() error {
		return f.Launch(cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z, cfg.Block.X, cfg.Block.Y, cfg.Block.Z,
			cfg.SharedBytes, cu.Stream{}, params)
	})
}

func (d *driver) newEvent() (e event, err error) {
	err = d.do(func() error { e, err = cu.MakeEvent(cu.DefaultEvent); return err })
	return
}

func (d *driver) destroyEvent(e event) error {
	return d.do(func() error { return cu.DestroyEvent(&e) })
}

func (d *driver) record(e event) error { return d.do(func() error { return e.Record(cu.Stream{}) }) }

func (d *driver) elapsed(a, b event) (ms float64, err error) {
	err = d.do(func() error {
		if err := b.Synchronize(); err != nil {
			return err
		}
		ms, err = a.Elapsed(b)
		return err
	})
	return
}

// HeaderVersion is the CUDA version of the cuda.h this program was built against, as "11.8".
func HeaderVersion() string {
	v := int(C.CUDA_VERSION)
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

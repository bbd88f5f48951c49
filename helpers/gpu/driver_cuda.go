//go:build !nocuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// launchParams copies a launch's packed arguments (n of them, argument i at offsets[i] of data) into
// C memory aligned to 64 bytes (a CUtensorMap argument needs it) and launches.
static CUresult launchParams(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned smem, const void *data, size_t bytes, const long long *offsets, int n) {
	void *buf = NULL;
	if (bytes > 0 && posix_memalign(&buf, 64, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
	void **argp = (void **)malloc((n > 0 ? n : 1) * sizeof(void *));
	if (argp == NULL) { free(buf); return CUDA_ERROR_OUT_OF_MEMORY; }
	if (bytes > 0) memcpy(buf, data, bytes);
	for (int i = 0; i < n; i++) argp[i] = (char *)buf + offsets[i];
	CUresult r = cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, 0, argp, NULL);
	free(argp);
	free(buf);
	return r;
}

// cuTensorMapEncodeTiled came with CUDA 12.0; the cuda.h this package builds against may be 11.8's,
// so its prototype is declared here with plain C types, and the driver's symbol is looked up at run
// time through cuGetProcAddress (the driver a 12.0 or newer toolkit installs has it).
typedef CUresult (*encodeTiledFn)(void *tensorMap, int dataType, uint32_t rank, void *globalAddress,
		const uint64_t *globalDim, const uint64_t *globalStrides, const uint32_t *boxDim,
		const uint32_t *elementStrides, int interleave, int swizzle, int l2Promotion, int oobFill);

static CUresult encodeTiled(void *out, int dtype, uint32_t rank, CUdeviceptr base, const uint64_t *dims,
		const uint64_t *strides, const uint64_t *box64, int swizzle, int *found) {
	void *fn = NULL;
	*found = 0;
	CUresult r = cuGetProcAddress("cuTensorMapEncodeTiled", &fn, 12000, 0);
	if (r != CUDA_SUCCESS || fn == NULL) return r == CUDA_SUCCESS ? CUDA_ERROR_NOT_FOUND : r;
	*found = 1;
	uint32_t box[5], estrides[5];
	for (uint32_t i = 0; i < rank && i < 5; i++) { box[i] = (uint32_t)box64[i]; estrides[i] = 1; }
	// dims and box innermost first; strides (in bytes) of every dimension but the innermost;
	// interleave none (0), L2 promotion of 256 bytes (3), out-of-bounds elements filled with zeros (0)
	return ((encodeTiledFn)fn)(out, dtype, rank, (void *)base, dims, strides, box, estrides, 0, swizzle, 3, 0);
}
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
	"bytes"
	"fmt"
	"runtime"
	"strings"
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

// jitLogBytes is the size of the buffer for the driver JIT's error log.
const jitLogBytes = 16 << 10

// load JIT-compiles and loads PTX; when the JIT refuses it, the error carries the JIT's own log
// (ptxas's message: the driver's error code alone says only InvalidPtx).
func (d *driver) load(ptx string) (m module, err error) {
	buf := make([]byte, jitLogBytes)
	err = d.do(func() error { m, err = cu.LoadDataEx(ptx, &cu.JITErrorLogBuffer{Buffer: buf}); return err })
	if err != nil {
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			buf = buf[:i]
		}
		if log := strings.TrimSpace(string(buf)); log != "" {
			err = fmt.Errorf("%w; the JIT's log: %s", err, log)
		}
	}
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

func (d *driver) launch(f function, cfg Config, p params) error {
	offsets := make([]C.longlong, len(p.offsets)+1)
	for i, o := range p.offsets {
		offsets[i] = C.longlong(o)
	}
	data := p.data
	if len(data) == 0 {
		data = []byte{0}
	}
	return d.do(func() error {
		cf := *(*C.CUfunction)(unsafe.Pointer(&f))
		r := C.launchParams(cf, C.uint(cfg.Grid.X), C.uint(cfg.Grid.Y), C.uint(cfg.Grid.Z),
			C.uint(cfg.Block.X), C.uint(cfg.Block.Y), C.uint(cfg.Block.Z), C.uint(cfg.SharedBytes),
			unsafe.Pointer(&data[0]), C.size_t(len(p.data)), &offsets[0], C.int(len(p.offsets)))
		if r != C.CUDA_SUCCESS {
			return resultError(r)
		}
		return nil
	})
}

// resultError is a CUresult as an error with the driver's name for it: "CUDA_ERROR_INVALID_VALUE
// (1)".
func resultError(r C.CUresult) error {
	var name *C.char
	if C.cuGetErrorName(r, &name) == C.CUDA_SUCCESS && name != nil {
		return fmt.Errorf("%s (%d)", C.GoString(name), int(r))
	}
	return fmt.Errorf("CUresult %d", int(r))
}

func (d *driver) encodeTiled(out *[16]uint64, t TensorMapSpec) error {
	extents, strides, box := t.dims()
	return d.do(func() error {
		var found C.int
		var buf [16]C.uint64_t
		var cd, cs, cb [5]C.uint64_t
		for i := range extents {
			cd[i], cb[i] = C.uint64_t(extents[i]), C.uint64_t(box[i])
		}
		for i := range strides {
			cs[i] = C.uint64_t(strides[i])
		}
		r := C.encodeTiled(unsafe.Pointer(&buf[0]), C.int(t.DType), C.uint32_t(len(extents)), C.CUdeviceptr(t.Base.DevicePtr()),
			&cd[0], &cs[0], &cb[0], C.int(t.Swizzle), &found)
		if found == 0 {
			return fmt.Errorf("the driver has no cuTensorMapEncodeTiled (it came with CUDA 12.0; this driver is %d): %w", cu.Version(), resultError(r))
		}
		if r != C.CUDA_SUCCESS {
			return fmt.Errorf("cuTensorMapEncodeTiled: %w", resultError(r))
		}
		for i := range buf {
			out[i] = uint64(buf[i])
		}
		return nil
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

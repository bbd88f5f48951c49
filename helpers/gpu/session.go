package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// Session is an open GPU: its device facts and a CUDA context made current on whichever OS thread
// calls in. It is not safe for concurrent use by several goroutines.
type Session struct {
	Device DeviceInfo
	drv    *driver
	timer  [2]event
	hasEvt bool
	// launches counts the launches of each kernel by source and name (Launches).
	launches map[[2]string]int
	// pending are the launches since the last successful synchronisation (Pending); faulted is
	// the first kernel fault (Faulted).
	pending []LaunchInfo
	queued  int // launches since the last successful synchronisation (pending keeps the last few)
	faulted *FaultError
	// waitLimit and waitReport are the deadline on waits for the GPU (GuardWaits).
	waitLimit  WaitLimit
	waitReport WaitReport
}

// Open opens device 0. In the nocuda build, or when no GPU answers, the error wraps ErrNoGPU.
func Open() (*Session, error) { return OpenDevice(0) }

// OpenDevice opens the device with the given ordinal. When KERNELS_EMULATE names a profile, the
// session's Device is the device emulating it (Emulate): plans, launch checks and occupancy see the
// profile's limits; a profile the device cannot emulate is an error.
func OpenDevice(ordinal int) (*Session, error) {
	p, emulate, err := EmulatedProfile()
	if err != nil {
		return nil, err
	}
	drv, info, err := openDriver(ordinal)
	if err != nil {
		return nil, err
	}
	if emulate {
		if info, err = Emulate(info, p); err != nil {
			drv.close()
			return nil, err
		}
	}
	return &Session{Device: info, drv: drv}, nil
}

// Close releases the session's events and its hold on the device's context.
func (s *Session) Close() error {
	if s == nil || s.drv == nil {
		return nil
	}
	if s.hasEvt {
		for _, e := range s.timer {
			s.drv.destroyEvent(e)
		}
		s.hasEvt = false
	}
	err := s.drv.close()
	s.drv = nil
	return err
}

// Synchronize waits for all work queued on the device and reports the first error of any of it
// (an illegal address in a kernel shows up here).
func (s *Session) Synchronize() error {
	if err := s.wait(s.drv.synchronize); err != nil {
		return fmt.Errorf("waiting for the GPU: %w", s.fault(err))
	}
	s.synced()
	return nil
}

// MemInfo returns the free and total device memory in bytes.
func (s *Session) MemInfo() (free, total int64, err error) { return s.drv.memInfo() }

// Elapsed runs fn between two events on the default stream and returns the GPU time in
// milliseconds between them. fn should only queue work (launches, copies, memsets).
func (s *Session) Elapsed(fn func() error) (float64, error) {
	if !s.hasEvt {
		for i := range s.timer {
			e, err := s.drv.newEvent()
			if err != nil {
				return 0, fmt.Errorf("creating a timing event: %w", err)
			}
			s.timer[i] = e
		}
		s.hasEvt = true
	}
	if err := s.drv.record(s.timer[0]); err != nil {
		return 0, fmt.Errorf("recording the start event: %w", s.fault(err))
	}
	if err := fn(); err != nil {
		return 0, s.fault(err)
	}
	if err := s.drv.record(s.timer[1]); err != nil {
		return 0, fmt.Errorf("recording the stop event: %w", s.fault(err))
	}
	var ms float64
	err := s.wait(func() (err error) { ms, err = s.drv.elapsed(s.timer[0], s.timer[1]); return err })
	if err != nil {
		return 0, fmt.Errorf("reading the events (did the work fail?): %w", s.fault(err))
	}
	s.synced()
	return ms, nil
}

// Module is PTX loaded into the session's context.
type Module struct {
	// Source names the file the PTX was compiled from, for the launch records (Session.Launches);
	// whoever loads the module sets it.
	Source string
	s      *Session
	mod    module
}

// Load JIT-compiles PTX for the device and loads it. The driver's JIT log comes back in the error.
func (s *Session) Load(ptx string) (*Module, error) {
	m, err := s.drv.load(ptx)
	if err != nil {
		return nil, fmt.Errorf("loading PTX (the driver JIT-compiles it for %s): %w", s.Device.Name, err)
	}
	return &Module{s: s, mod: m}, nil
}

// Kernel looks up an extern "C" __global__ function by name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	fn, err := m.s.drv.function(m.mod, name)
	if err != nil {
		return nil, fmt.Errorf("kernel %q not found in the module (declare it extern \"C\" so its name is not mangled): %w", name, err)
	}
	attrs, err := m.s.drv.attrs(fn)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: reading its attributes: %w", name, err)
	}
	return &Kernel{Name: name, Source: m.Source, Attrs: attrs, s: m.s, fn: fn}, nil
}

// Kernel is a loaded __global__ function.
type Kernel struct {
	Name   string
	Source string // the file it was compiled from (its Module's Source)
	Attrs  KernelAttrs
	s      *Session
	fn     function
	optin  int // dynamic shared memory the kernel was opted in to, above the 48 KiB default
}

// Occupancy asks the driver how many blocks of blockThreads threads with dynShared bytes of dynamic
// shared memory fit on one SM, and names what limits them.
func (k *Kernel) Occupancy(blockThreads, dynShared int) (Occupancy, error) {
	est := EstimateOccupancy(k.s.Device, k.Attrs, blockThreads, dynShared)
	// The driver counts a kernel as fitting no block at all when it asks for more dynamic shared
	// memory than the kernel was opted in to, so opt in first, as Launch would.
	if err := k.optIn(dynShared); err != nil {
		return est, err
	}
	n, err := k.s.drv.occupancy(k.fn, blockThreads, dynShared)
	if err != nil {
		return est, fmt.Errorf("kernel %s: occupancy for block %d: %w", k.Name, blockThreads, err)
	}
	if k.s.Device.Emulation != nil {
		n = min(n, est.BlocksPerSM) // the host may fit more blocks than the emulated GPU's limits allow
	}
	est.BlocksPerSM = n
	est.WarpsPerSM = n * CeilDiv(blockThreads, 32)
	est.Fraction = float64(est.WarpsPerSM) / float64(k.s.Device.MaxThreadsPerSM/32)
	return est, nil
}

// Launch checks cfg against the device's and the kernel's limits, then queues the kernel on the
// default stream. Arguments must match the kernel's C parameters: a buffer (anything with a
// DevicePtr method) for a pointer, int32 for int, uint32 for unsigned, float32 for float, int64 for
// long long, float64 for double, a *TensorMap for a `const __grid_constant__ CUtensorMap`. A Go
// int is refused: its C size is ambiguous.
func (k *Kernel) Launch(cfg Config, args ...any) error {
	if err := CheckConfig(k.s.Device, k.Attrs, cfg); err != nil {
		return fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	p, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	if err := k.optIn(cfg.SharedBytes); err != nil {
		return err
	}
	if err := k.s.drv.launch(k.fn, cfg, p); err != nil {
		return fmt.Errorf("kernel %s: launch grid %v block %v shared %d: %w", k.Name, cfg.Grid, cfg.Block, cfg.SharedBytes, k.s.fault(err))
	}
	k.s.countLaunch(k)
	k.s.noteLaunch(k, cfg)
	return nil
}

// AllowLargeClusters lets the kernel launch in thread block clusters above the portable size of
// 8 blocks (16 on an H100 or H200), which the driver refuses unless asked first.
func (k *Kernel) AllowLargeClusters() error {
	if err := k.s.drv.allowLargeClusters(k.fn); err != nil {
		return fmt.Errorf("kernel %s: allowing clusters over 8 blocks: %w", k.Name, err)
	}
	return nil
}

// MaxActiveClusters asks the driver how many clusters of the kernel (compiled with
// __cluster_dims__) fit on the GPU at once, for blocks of blockThreads threads and dynShared bytes
// of dynamic shared memory; 0 means the cluster cannot launch at all.
func (k *Kernel) MaxActiveClusters(grid, blockThreads, dynShared int) (int, error) {
	if err := k.optIn(dynShared); err != nil {
		return 0, err
	}
	n, err := k.s.drv.maxActiveClusters(k.fn, grid, blockThreads, dynShared)
	if err != nil {
		return 0, fmt.Errorf("kernel %s: clusters for block %d: %w", k.Name, blockThreads, err)
	}
	return n, nil
}

// optIn raises the kernel's dynamic shared memory limit when bytes needs it: by default a kernel
// may have 48 KiB of shared memory in all, so the default dynamic limit is 48 KiB less the
// kernel's static shared memory (49152 dynamic bytes beside any static ones already need it).
func (k *Kernel) optIn(bytes int) error {
	if bytes+k.Attrs.StaticSharedBytes <= 48*1024 || bytes <= k.optin {
		return nil
	}
	if err := k.s.drv.setMaxDynamicShared(k.fn, bytes); err != nil {
		return fmt.Errorf("kernel %s: opting in to %d bytes of dynamic shared memory: %w", k.Name, bytes, err)
	}
	k.optin = bytes
	return nil
}

// DevicePointer is implemented by device buffers and views.
type DevicePointer interface{ DevicePtr() uintptr }

// params are a launch's arguments laid out as cuLaunchKernel reads them: argument i's bytes start
// at offsets[i] of data, 8 bytes for a scalar or a pointer, 128 for a tensor map (at a multiple of
// 64, the alignment CUtensorMap has in C).
type params struct {
	data    []byte
	offsets []int
}

// word returns argument i's first 8 bytes as a little-endian word (what a scalar argument holds).
func (p params) word(i int) uint64 { return binary.LittleEndian.Uint64(p.data[p.offsets[i]:]) }

// packArgs lays out launch arguments as the driver copies them.
func packArgs(args []any) (params, error) {
	var p params
	put := func(w uint64) {
		p.offsets = append(p.offsets, len(p.data))
		p.data = binary.LittleEndian.AppendUint64(p.data, w)
	}
	for i, a := range args {
		switch v := a.(type) {
		case *TensorMap:
			if v == nil {
				return params{}, fmt.Errorf("argument %d is a nil tensor map", i)
			}
			for len(p.data)%64 != 0 {
				p.data = append(p.data, 0)
			}
			p.offsets = append(p.offsets, len(p.data))
			for _, w := range v.words {
				p.data = binary.LittleEndian.AppendUint64(p.data, w)
			}
		case DevicePointer:
			put(uint64(v.DevicePtr()))
		case int32:
			put(uint64(uint32(v)))
		case uint32:
			put(uint64(v))
		case int64:
			put(uint64(v))
		case uint64:
			put(v)
		case float32:
			put(uint64(math.Float32bits(v)))
		case float64:
			put(math.Float64bits(v))
		case uintptr:
			put(uint64(v))
		case int:
			return params{}, fmt.Errorf("argument %d is a Go int (%d): pass int32 for a C int or int64 for long long", i, v)
		default:
			return params{}, fmt.Errorf("argument %d has type %T: pass a device buffer, a *TensorMap, int32, uint32, int64, uint64, float32 or float64", i, a)
		}
	}
	return p, nil
}

// sizeOf is the size in bytes of one element of type T.
func sizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Package gpu is the GPU session every lesson shares: device facts, a CUDA context, typed device
// buffers, kernels loaded from PTX, launches checked against the device's limits, and event timing.
//
// It wraps gorgonia.org/cu. That package ends the process in its init when no GPU answers, so the
// build tag nocuda compiles this package without it: Open then returns ErrNoGPU and everything else
// that needs the driver returns an error, while the checks that need no driver (launch limits,
// occupancy arithmetic) still work.
//
//	s, err := gpu.Open()
//	if err != nil { ... }            // errors.Is(err, gpu.ErrNoGPU) in the no-GPU build
//	defer s.Close()
//	x, _ := gpu.Upload(s, []float32{1, 2, 3})
//	mod, _ := s.Load(ptx)
//	k, _ := mod.Kernel("scale")
//	err = k.Launch(gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(32)}, x, int32(3))
//
// Every CUDA error comes back as a Go error saying what was being done.
package gpu

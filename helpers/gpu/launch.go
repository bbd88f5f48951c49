package gpu

import (
	"fmt"
	"math"
)

// Dim is a grid or block size in three dimensions.
type Dim struct{ X, Y, Z int }

// D1 is a one-dimensional Dim.
func D1(x int) Dim { return Dim{x, 1, 1} }

// D2 is a two-dimensional Dim.
func D2(x, y int) Dim { return Dim{x, y, 1} }

// Count is the number of threads (or blocks) in d.
func (d Dim) Count() int { return d.X * d.Y * d.Z }

func (d Dim) String() string {
	switch {
	case d.Z == 1 && d.Y == 1:
		return fmt.Sprintf("%d", d.X)
	case d.Z == 1:
		return fmt.Sprintf("(%d,%d)", d.X, d.Y)
	}
	return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z)
}

// Config is a launch configuration: grid, block and dynamic shared memory in bytes.
type Config struct {
	Grid, Block Dim
	SharedBytes int
}

// CeilDiv is the number of blocks of size b needed to cover n items.
func CeilDiv(n, b int) int { return (n + b - 1) / b }

// KernelAttrs are what the driver reports about a compiled kernel.
type KernelAttrs struct {
	Registers          int `json:"registers"`
	StaticSharedBytes  int `json:"static_shared_bytes"`
	LocalBytes         int `json:"local_bytes"` // per thread; above zero means register spills or local arrays
	MaxThreadsPerBlock int `json:"max_threads_per_block"`
}

// CheckConfig reports whether cfg can launch a kernel with attributes k on device d, with an error
// naming the limit it breaks. Launch calls it before every launch.
func CheckConfig(d DeviceInfo, k KernelAttrs, cfg Config) error {
	b, g := cfg.Block, cfg.Grid
	if b.X < 1 || b.Y < 1 || b.Z < 1 {
		return fmt.Errorf("block %v: every dimension must be at least 1", b)
	}
	if g.X < 1 || g.Y < 1 || g.Z < 1 {
		return fmt.Errorf("grid %v: every dimension must be at least 1 (an empty input launches nothing; handle it before the launch)", g)
	}
	if b.X > 1024 || b.Y > 1024 || b.Z > 64 {
		if d.MaxThreadsPerBlock > 0 && b.Count() > d.MaxThreadsPerBlock {
			return fmt.Errorf("block %v has %d threads, over the device's limit of %d threads per block (the limits per dimension are (1024, 1024, 64)): use more blocks of fewer threads", b, b.Count(), d.MaxThreadsPerBlock)
		}
		return fmt.Errorf("block %v: the limits per dimension are (1024, 1024, 64)", b)
	}
	limit := d.MaxThreadsPerBlock
	if k.MaxThreadsPerBlock > 0 && k.MaxThreadsPerBlock < limit {
		limit = k.MaxThreadsPerBlock
	}
	if b.Count() > limit {
		why := "the device's limit"
		if limit < d.MaxThreadsPerBlock {
			why = fmt.Sprintf("this kernel's limit (it uses %d registers per thread)", k.Registers)
		}
		return fmt.Errorf("block %v has %d threads, over %s of %d", b, b.Count(), why, limit)
	}
	if g.X > math.MaxInt32 || g.Y > 65535 || g.Z > 65535 {
		return fmt.Errorf("grid %v: the limits are (2147483647, 65535, 65535)", g)
	}
	if cfg.SharedBytes < 0 {
		return fmt.Errorf("dynamic shared memory %d bytes is negative", cfg.SharedBytes)
	}
	total := cfg.SharedBytes + k.StaticSharedBytes
	max := d.MaxSharedPerBlockOptin
	if max == 0 {
		max = d.MaxSharedPerBlock
	}
	if total > max {
		return fmt.Errorf("shared memory %d bytes per block (%d dynamic + %d static) is over the device's limit of %d bytes",
			total, cfg.SharedBytes, k.StaticSharedBytes, max)
	}
	return nil
}

// Occupancy says how many blocks of a launch fit on one SM and what limits them.
type Occupancy struct {
	BlocksPerSM int     `json:"blocks_per_sm"`
	WarpsPerSM  int     `json:"warps_per_sm"`
	Fraction    float64 `json:"occupancy"` // active warps over the SM's maximum
	Limiter     string  `json:"limiter"`   // "threads", "registers", "shared memory" or "blocks"
}

// EstimateOccupancy computes the theoretical occupancy of a launch from the device's per-SM
// resources, the way the CUDA occupancy calculator does (registers allocated per warp in units of
// 256, shared memory in units of 128 bytes). Session.Occupancy asks the driver instead; the two agree
// on current GPUs, and this one also works without a GPU.
func EstimateOccupancy(d DeviceInfo, k KernelAttrs, blockThreads, dynShared int) Occupancy {
	warp := d.WarpSize
	if warp == 0 {
		warp = 32
	}
	warps := CeilDiv(blockThreads, warp)
	limits := []struct {
		name string
		n    int
	}{
		{"threads", d.MaxThreadsPerSM / (warps * warp)},
		{"blocks", d.MaxBlocksPerSM},
	}
	if k.Registers > 0 {
		perWarp := CeilDiv(k.Registers*warp, 256) * 256
		limits = append(limits, struct {
			name string
			n    int
		}{"registers", d.RegsPerSM / (perWarp * warps)})
	}
	if smem := k.StaticSharedBytes + dynShared; smem > 0 {
		smem = CeilDiv(smem+1024, 128) * 128 // the driver reserves 1 KiB per block since cc 8.0
		limits = append(limits, struct {
			name string
			n    int
		}{"shared memory", d.MaxSharedPerSM / smem})
	}
	best := limits[0]
	for _, l := range limits[1:] {
		if l.n < best.n {
			best = l
		}
	}
	o := Occupancy{BlocksPerSM: best.n, WarpsPerSM: best.n * warps, Limiter: best.name}
	if max := d.MaxThreadsPerSM / warp; max > 0 {
		o.Fraction = float64(o.WarpsPerSM) / float64(max)
	}
	return o
}

// WavesGrid is the grid of a grid-stride kernel: enough blocks of block threads to cover work
// items, but at most waves times the blocks the device keeps resident at once (SMs x threads per
// SM / block), so that a huge input does not launch millions of short-lived blocks.
func WavesGrid(d DeviceInfo, work, block, waves int) int {
	resident := d.SMs * d.MaxThreadsPerSM / block
	return max(1, min(CeilDiv(work, block), resident*waves))
}

// Aligned reports whether every pointer is a multiple of bytes: vector loads of 16 bytes (float4,
// uint4) fault on an address that is not 16-byte aligned, so kernels that use them need a fallback.
func Aligned(bytes uintptr, ptrs ...DevicePointer) bool {
	for _, p := range ptrs {
		if p.DevicePtr()%bytes != 0 {
			return false
		}
	}
	return true
}

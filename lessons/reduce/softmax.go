package reduce

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// SoftmaxLaunch is how a softmax step runs on a shape: the kernel, its launch, its compile-time
// defines, the vec argument (-1: the kernel takes none), and why. Steps 8 and 9 add dynamic shared
// memory, clusters over 8 blocks, and a second kernel on the same grid.
type SoftmaxLaunch struct {
	Kernel      string
	Grid, Block int
	Defines     []string
	Vec         int32
	Note        string
	// Shared is the dynamic shared memory of each block, in bytes.
	Shared int
	// LargeCluster says the kernel runs in clusters over the portable 8 blocks: the driver must be
	// asked to allow them first.
	LargeCluster bool
	// Cluster is the blocks per cluster (0: no clusters). Persistent: the grid is cut down at
	// launch to the clusters that fit on the GPU at once, which walk the rows.
	Cluster    int
	Persistent bool
	// Second is the kernel of a second launch on the same grid (step 9's write pass), "" if none;
	// Chunks and Chunk4 are step 9's chunks per row and float4s per chunk (step 11: per block).
	Second         string
	Chunks, Chunk4 int
	// Team is step 11's blocks per team (0: not step 11), and Ring the rows of its mailbox.
	Team, Ring int
}

// SoftmaxInput is what a step's plan looks at: the dtype and shape, the alignment of x and y, and
// the GPU (its shared memory, SMs and clusters).
type SoftmaxInput struct {
	DType      DType
	Rows, Cols int
	// Aligned: x and y both start on a 16-byte boundary. SameOffset: they are the same distance from
	// one (steps 8 and 9 then move float4s after a scalar head of each row).
	Aligned, SameOffset bool
	Device              gpu.DeviceInfo
}

// SoftmaxStep is one rung of the softmax ladder.
type SoftmaxStep struct {
	Name   string // "1 naive", ...
	File   string
	Idea   string
	DTypes []DType
	// Plan picks the launch for an input; it refuses what the step cannot take, naming the limit,
	// before any launch.
	Plan func(in SoftmaxInput) (SoftmaxLaunch, error)
}

// NaiveMaxCols is the longest row of the naive step: one thread sums it in sequence, and past this
// length float32's rounding of that sum breaks the fp32 bound (1.8e-4 measured at 262144 columns).
const NaiveMaxCols = 65536

// ClusterVecs is the number of float4s each thread of the cluster step holds in registers.
const ClusterVecs = 8

// MaxCluster is the largest cluster the cluster step uses (the portable limit of the hardware).
const MaxCluster = 8

// MaxLargeCluster is the largest cluster of step 8: 16 blocks, the non-portable limit of
// compute capability 9.0 (the H100 and H200).
const MaxLargeCluster = 16

// WarpRowMaxCols is the longest row of the warp-per-row step (32 floats per lane).
const WarpRowMaxCols = 1024

// SoftmaxSteps are the softmax steps, in order.
var SoftmaxSteps = []SoftmaxStep{
	{Name: "1 naive", File: "s1_naive.cu", Idea: "a thread per row, three passes", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			if in.Cols > NaiveMaxCols {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 1 adds a row in sequence in one thread: cols = %d is over its limit of %d (float32 rounding of a longer sequential sum passes the 1e-5 bound); step 2 adds in a tree", in.Cols, NaiveMaxCols)
			}
			return SoftmaxLaunch{Kernel: "softmax_naive", Grid: gpu.CeilDiv(in.Rows, 128), Block: 128, Vec: -1}, nil
		}},
	{Name: "2 block tree", File: "s2_block_tree.cu", Idea: "a block per row, shared-memory tree reductions", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return SoftmaxLaunch{Kernel: "softmax_block_tree", Grid: in.Rows, Block: 256, Vec: -1}, nil
		}},
	{Name: "3 warp shuffles + float4", File: "s3_warp_float4.cu", Idea: "shuffle reductions, 16-byte loads (the article's shape)", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			if in.Cols%4 != 0 || !in.Aligned {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 3 loads float4s: it needs cols %% 4 == 0 (cols = %d) and 16-byte aligned x and y (aligned: %v); step 4 takes any shape", in.Cols, in.Aligned)
			}
			return SoftmaxLaunch{Kernel: "softmax_warp_float4", Grid: in.Rows, Block: 256, Vec: -1}, nil
		}},
	{Name: "4 online", File: "s4_online.cu", Idea: "one pass for max and sum, one to write", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			l := SoftmaxLaunch{Kernel: "softmax_online", Grid: in.Rows, Block: 512}
			if in.Cols%4 == 0 && in.Aligned {
				l.Vec = 1
			} else {
				l.Note = "not float4-able (cols % 4 != 0 or misaligned): single floats"
			}
			return l, nil
		}},
	{Name: "5 cluster, read once", File: "s5_cluster.cu", Idea: "the row split across a thread block cluster, held in registers", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return PlanCluster(in.Rows, in.Cols, in.Aligned, ClusterVecs)
		}},
	{Name: "6 warp per row", File: "s6_warp_row.cu", Idea: "short rows: a warp per row, the row in registers", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			if in.Cols > WarpRowMaxCols {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 6 keeps a row in one warp's registers: cols = %d is over its limit of %d", in.Cols, WarpRowMaxCols)
			}
			l := SoftmaxLaunch{Kernel: "softmax_warp_row4", Grid: gpu.CeilDiv(in.Rows, 8), Block: 256, Vec: -1}
			if in.Cols%4 != 0 || !in.Aligned {
				l.Kernel, l.Note = "softmax_warp_row1", "not float4-able: single floats"
			}
			return l, nil
		}},
	{Name: "7 half / bfloat16", File: "s7_half.cu", Idea: "16-bit rows, float arithmetic", DTypes: []DType{F16, BF16},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			l := SoftmaxLaunch{Kernel: "softmax_f16", Grid: in.Rows, Block: 512}
			if in.DType == BF16 {
				l.Kernel = "softmax_bf16"
			}
			if in.Cols%8 == 0 && in.Aligned {
				l.Vec = 1
			} else {
				l.Note = "not 16-byte-able (cols % 8 != 0 or misaligned): single elements"
			}
			return l, nil
		}},
	{Name: "8 any length, read once", File: "s8_cluster_any.cu", Idea: "clusters of up to 16 blocks, registers + shared memory, scalar heads and tails", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return PlanClusterAny(in, DefaultClusterPolicy)
		}},
	{Name: "8b streamed, L2 second read", File: "s8b_cluster_stream.cu", Idea: "persistent clusters stream long rows twice, the second read from L2, two rows in flight", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return PlanClusterStream(in, DefaultStreamPolicy), nil
		}},
	{Name: "9 split row, two passes", File: "s9_split_row.cu", Idea: "a row over many blocks, a second launch as the barrier (no clusters needed)", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return PlanSplit(in, "softmax_split_stats", "softmax_split_write"), nil
		}},
	{Name: "11 grid ring, read once", File: "s11_grid_ring.cu", Idea: "teams of resident blocks hold long rows, a ring of rows per block, pairs through global memory", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return PlanGridRing(in, DefaultRingPolicy)
		}},
}

// PlanCluster picks the cluster step's launch: the smallest cluster (1, 2, 4 or 8 blocks) whose
// blocks of at most 1024 threads, each thread holding vecs float4s, cover a row, and the fewest
// threads (a multiple of 32) that do.
func PlanCluster(rows, cols int, aligned bool, vecs int) (SoftmaxLaunch, error) {
	if cols%4 != 0 || !aligned {
		return SoftmaxLaunch{}, fmt.Errorf("softmax step 5 holds float4s: it needs cols %% 4 == 0 (cols = %d) and 16-byte aligned x and y (aligned: %v); step 8 takes any shape", cols, aligned)
	}
	maxThreads := 1024
	if vecs > 8 {
		maxThreads = 512 // more registers per thread: a 1024-thread block would not fit the SM's 64K registers
	}
	for c := 1; c <= MaxCluster; c *= 2 {
		if c*maxThreads*vecs*4 >= cols {
			threads := gpu.CeilDiv(gpu.CeilDiv(cols, c*vecs*4), 32) * 32
			return SoftmaxLaunch{Kernel: "softmax_cluster", Grid: rows * c, Block: threads, Vec: -1, Cluster: c,
				Defines: []string{fmt.Sprintf("CLUSTER=%d", c), fmt.Sprintf("VECS=%d", vecs)},
				Note:    fmt.Sprintf("cluster of %d blocks of %d threads, %d floats per thread", c, threads, 4*vecs)}, nil
		}
	}
	return SoftmaxLaunch{}, fmt.Errorf("softmax step 5 holds a row on chip: cols = %d is over its limit of %d (%d blocks of %d threads x %d floats); step 8 takes longer rows",
		cols, MaxCluster*maxThreads*vecs*4, MaxCluster, maxThreads, 4*vecs)
}

// ClusterPolicy is how step 8 sizes its clusters: a row that one block of 1024 threads holds in
// RegisterVecs float4s a thread takes step 5's layout (registers only, as few threads as hold it);
// longer rows take blocks of Threads threads holding Vecs float4s each in registers and up to
// Stash more in shared memory, in the first cluster of Sizes that holds the row. When none does,
// the largest holds what the shared memory allows.
type ClusterPolicy struct {
	RegisterVecs         int
	Threads, Vecs, Stash int
	Sizes                []int
	// PersistentFrom is the smallest cluster launched persistent (only as many clusters as fit at
	// once, walking the rows).
	PersistentFrom int
	// BlocksPerSM is how many blocks the registers must allow on an SM at once (the kernel's
	// launch bounds; 0 is 1).
	BlocksPerSM int
}

// DefaultClusterPolicy is step 8's policy on the H100, chosen by measurement (the lesson's tuning
// test, TestTuneClusterAny, on rows from 4096 to 1,048,576 floats, 2026-11-26). Rows of up to
// 32768 floats: one block, 8 float4s a thread in registers (98.2% of the copy bandwidth at 4096,
// where blocks of 4 float4s a thread reached 91.2%). Longer rows: blocks of 512 threads, two to an
// SM, each thread holding 4 float4s in registers and up to 13 in shared memory (106 KB a block), in
// the smallest cluster of 1 to 8 blocks (then 12 or 16) that holds the row. Against blocks of 1024
// threads, one to an SM, with 8 float4s in registers and 8 in shared memory: 96.7% against 94.0%
// at 65536 floats and 93.6% against 91.8% at 262144 (both without register spills). Longer rows
// need 12- and 16-block clusters, of which only 7 fit on an H100: they stay near 63%, and the op
// sends them to step 11.
var DefaultClusterPolicy = ClusterPolicy{RegisterVecs: 8, Threads: 512, Vecs: 4, Stash: 13, Sizes: []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16}, PersistentFrom: 16, BlocksPerSM: 2}

// stashLimit is the dynamic shared memory step 8 may ask of a block: the opt-in limit less the
// kernel's static shared memory (a few hundred bytes) and a margin.
func stashLimit(d gpu.DeviceInfo) int {
	return max(d.MaxSharedPerBlockOptin, d.MaxSharedPerBlock) - 1024
}

// PlanClusterAny picks step 8's launch under policy pol: one block holding the row in registers
// when pol.RegisterVecs float4s a thread do (as step 5, any length); else the first cluster size
// whose blocks hold it in registers, or in registers and at most pol.Stash float4s per thread of
// shared memory; past that, the largest cluster with all the shared memory a block may have. It
// refuses rows that do not fit even so, naming the limit.
func PlanClusterAny(in SoftmaxInput, pol ClusterPolicy) (SoftmaxLaunch, error) {
	n4 := gpu.CeilDiv(in.Cols, 4)
	l := SoftmaxLaunch{Kernel: "softmax_cluster_any", Vec: 0}
	if in.SameOffset {
		l.Vec = 1
	} else {
		l.Note = "x and y at different offsets from 16 bytes: single floats; "
	}
	const blockMax = 1024
	if pol.RegisterVecs > 0 && n4 <= blockMax*pol.RegisterVecs { // step 5's layout: one block, registers only
		threads := gpu.CeilDiv(gpu.CeilDiv(n4, pol.RegisterVecs), 32) * 32
		l.Grid, l.Block, l.Cluster = in.Rows, threads, 1
		l.Defines = []string{"CLUSTER=1", fmt.Sprintf("VECS=%d", pol.RegisterVecs), "SVECS=0", fmt.Sprintf("MAXT=%d", blockMax), "MINB=1"}
		l.Note += fmt.Sprintf("cluster of 1 block of %d threads, %d floats per thread in registers", threads, 4*pol.RegisterVecs)
		return l, nil
	}
	limit := stashLimit(in.Device)
	maxStash := max(limit/(pol.Threads*16), 0)
	c, stash, threads, found := 0, 0, pol.Threads, false
	for _, size := range pol.Sizes {
		c = size
		if c*pol.Threads*pol.Vecs >= n4 {
			threads, found = gpu.CeilDiv(gpu.CeilDiv(n4, c*pol.Vecs), 32)*32, true
			break
		}
		if need := gpu.CeilDiv(n4, c*pol.Threads) - pol.Vecs; need <= min(pol.Stash, maxStash) {
			stash, found = need, true
			break
		}
	}
	if need := gpu.CeilDiv(n4, c*pol.Threads) - pol.Vecs; !found && need <= maxStash {
		stash, found = need, true
	}
	if !found {
		most := c * pol.Threads * (pol.Vecs + maxStash) * 4
		return SoftmaxLaunch{}, fmt.Errorf("softmax step 8 holds a row in a cluster: cols = %d is over its limit of %d on %s (%d blocks of %d threads, %d floats each in registers, the rest in %d bytes of shared memory per block); step 9 takes any length",
			in.Cols, most, in.Device.Name, c, pol.Threads, 4*pol.Vecs, limit)
	}
	// Persistent clusters only for the largest: measured on the H100 they help 16-block clusters
	// (no waiting for 16 SMs of one GPC to be free at once between rows) and cost smaller ones.
	l.Grid, l.Block, l.Shared, l.LargeCluster, l.Cluster, l.Persistent = in.Rows*c, threads, stash*threads*16, c > MaxCluster, c, c >= pol.PersistentFrom
	l.Defines = []string{fmt.Sprintf("CLUSTER=%d", c), fmt.Sprintf("VECS=%d", pol.Vecs), fmt.Sprintf("SVECS=%d", stash),
		fmt.Sprintf("MAXT=%d", pol.Threads), fmt.Sprintf("MINB=%d", max(pol.BlocksPerSM, 1))}
	l.Note += fmt.Sprintf("cluster of %d blocks of %d threads, %d floats per thread in registers", c, threads, 4*pol.Vecs)
	if stash > 0 {
		l.Note += fmt.Sprintf(" and %d in shared memory", 4*stash)
	}
	return l, nil
}

// StreamPolicy is step 8b's launch: blocks of Threads threads in clusters of Cluster blocks.
type StreamPolicy struct{ Threads, Cluster int }

// DefaultStreamPolicy is step 8b's policy on the H100 (chosen by measurement: see the lesson).
var DefaultStreamPolicy = StreamPolicy{Threads: 1024, Cluster: 8}

// PlanClusterStream is step 8b's launch under pol: any row length (a row's part per block may be
// empty); the grid is cut down at launch to the clusters that fit at once.
func PlanClusterStream(in SoftmaxInput, pol StreamPolicy) SoftmaxLaunch {
	l := SoftmaxLaunch{Kernel: "softmax_cluster_stream", Grid: in.Rows * pol.Cluster, Block: pol.Threads, Cluster: pol.Cluster,
		Persistent: true, LargeCluster: pol.Cluster > MaxCluster, Defines: []string{fmt.Sprintf("CLUSTER=%d", pol.Cluster)},
		Note: fmt.Sprintf("clusters of %d blocks of %d threads", pol.Cluster, pol.Threads)}
	if in.SameOffset {
		l.Vec = 1
	} else {
		l.Note += "; x and y at different offsets from 16 bytes: single floats"
	}
	return l
}

// SplitChunk4 bounds step 9's chunks: at most 4096 float4s (64 KB of x) and at least 256 per block.
const (
	SplitChunk4Max = 4096
	SplitChunk4Min = 256
)

// PlanSplit picks the chunks of step 9 (and of the backward, which shares its layout: stats and
// write name the two kernels): rows are cut so that the grid has about four blocks per SM, with
// chunks of SplitChunk4Min to SplitChunk4Max float4s.
func PlanSplit(in SoftmaxInput, stats, write string) SoftmaxLaunch {
	n4 := max(in.Cols/4, 1)
	sms := max(in.Device.SMs, 1)
	chunk4 := min(max(gpu.CeilDiv(n4*in.Rows, 4*sms), SplitChunk4Min), SplitChunk4Max, n4)
	chunks := gpu.CeilDiv(n4, chunk4)
	l := SoftmaxLaunch{Kernel: stats, Second: write, Grid: in.Rows * chunks, Block: 512, Chunks: chunks, Chunk4: chunk4,
		Note: fmt.Sprintf("%d chunks of %d floats per row", chunks, 4*chunk4)}
	if in.SameOffset {
		l.Vec = 1
	} else {
		l.Note += "; x and y at different offsets from 16 bytes: single floats"
	}
	return l
}

// RingPolicy is step 11's launch: blocks of Threads threads, one per SM, in teams whose slices
// of a row are about SliceBytes each (0: sized from the GPU, RingSliceBytes); at least MinTeams
// teams (a team of more blocks waits on more of them for every row), and rings of at most MaxSlots
// slices.
type RingPolicy struct{ Threads, SliceBytes, MinTeams, MaxSlots int }

// RingSliceTime is how long a block should take to read its slice of a row at its share of the
// GPU's memory bandwidth. Every row costs each block a few microseconds whatever its slice (merging
// the team's pairs, the block's own barriers), so a slice must carry enough bytes to keep that cost
// small beside its transfer. The time was found by measurement (TestTuneClusterAny, rows of 65536
// to 1,048,576 floats at 1 GB): on the H100 (2026-11-26) slices of 48 KB in rings of 4 reached
// 89-94% of the copy bandwidth, 32 KB 80-91%, and teams of all 132 blocks (slices of 7-31 KB)
// 16-72%; on the H200 (2026-11-27), whose SMs each get 44% more bandwidth, slices of 48 KB reached
// 66-72% and 64 KB 73-80%, at every length the best or within 2 points of it. Both are about 1.9
// microseconds of the SM's share of the DRAM bandwidth: 48 KB at 3.35 TB/s over 132 SMs, 64 KB (of
// 69 KB) at 4.8 TB/s.
const RingSliceTime = 1.9e-6

// RingSliceBytes is the slice step 11 aims at on d: RingSliceTime of one SM's share of the DRAM
// bandwidth (from the memory clock and bus width), rounded down to 16 KB, at least 16 KB.
func RingSliceBytes(d gpu.DeviceInfo) int {
	perSM := d.TheoreticalBandwidthGBs() * 1e9 / float64(max(d.SMs, 1))
	return max(int(perSM*RingSliceTime)/(16<<10)*(16<<10), 16<<10)
}

// DefaultRingPolicy is step 11's policy: blocks of 512 threads (as fast as 256 or faster on rows
// of 262144 floats and more on the H100, within 0.5 points, up to 4.8 ahead at 393216; 128
// threads 4-8 points slower), slices sized from the GPU, at least two teams, rings of up to 4
// slices. At 1,048,576 floats two teams of 66 blocks reached 87.0% on the H100 (three teams of 44,
// 87.9%; one team of 132, 71.7%); on the H200 two teams of 64 blocks with 64 KB slices 76.3%,
// three of 44 72.7%.
var DefaultRingPolicy = RingPolicy{Threads: 512, MinTeams: 2, MaxSlots: 4}

// ringStatic is step 11's static shared memory for a ring of slots: each thread's max per slot,
// the per-warp pairs, the team's pairs, the head and tail floats and a flag.
func ringStatic(threads, slots int) int { return slots*(4*threads+32) + 16*threads/32 + 8*32 + 16 }

// PlanGridRing picks step 11's launch under pol: g blocks per team, the fewest whose slices of
// about pol.SliceBytes (or RingSliceBytes) hold a row but at most SMs / pol.MinTeams (more when two slices of a row
// would not fit a block's shared memory), as many teams as fit the SMs, and the largest ring of 2
// to pol.MaxSlots slices that fits (a ring of 4 writes a row 2 rows after its pair, smaller rings
// 1). It refuses GPUs without cp.async and rows whose two slices do not fit even with every SM in
// one team, naming the limit.
func PlanGridRing(in SoftmaxInput, pol RingPolicy) (SoftmaxLaunch, error) {
	d := in.Device
	if d.CC() < 80 {
		return SoftmaxLaunch{}, fmt.Errorf("softmax step 11 needs compute capability 8.0 (cp.async); %s has %d.%d", d.Name, d.Major, d.Minor)
	}
	sms, threads := max(d.SMs, 1), pol.Threads
	if threads < 32*gpu.CeilDiv(sms, 32) { // a warp reads the pairs of 32 blocks of the team
		threads = 32 * gpu.CeilDiv(sms, 32)
	}
	avail := func(slots int) int { return stashLimit(d) - ringStatic(threads, slots) }
	n4 := max(in.Cols/4, 1)
	slice := pol.SliceBytes
	if slice <= 0 {
		slice = RingSliceBytes(d)
	}
	g := min(max(gpu.CeilDiv(4*in.Cols, slice), 1), max(sms/max(pol.MinTeams, 1), 1))
	if need := gpu.CeilDiv(n4, max(avail(2)/32, 1)); need > g { // two slices must fit
		g = need
	}
	if g > sms {
		return SoftmaxLaunch{}, fmt.Errorf("softmax step 11 holds two slices of a row in each block's shared memory: cols = %d is over its limit of %d on %s (%d blocks of %d bytes); step 9 takes any length",
			in.Cols, 4*sms*(avail(2)/32), d.Name, sms, avail(2))
	}
	part4 := gpu.CeilDiv(n4, g)
	slots := 2
	for s := pol.MaxSlots; s > 2; s-- {
		if s*16*part4 <= avail(s) {
			slots = s
			break
		}
	}
	lag := 1
	if slots >= 4 {
		lag = 2
	}
	teams := sms / g
	l := SoftmaxLaunch{Kernel: "softmax_grid_ring", Grid: teams * g, Block: threads, Shared: slots * 16 * part4, Chunk4: part4, Team: g, Ring: 2*lag + 2,
		Defines: []string{fmt.Sprintf("THREADS=%d", threads), fmt.Sprintf("SLOTS=%d", slots), fmt.Sprintf("LAG=%d", lag), fmt.Sprintf("ELEMS=%d", gpu.CeilDiv(part4, threads))},
		Note:    fmt.Sprintf("%d teams of %d blocks, %.1f KB slices, a ring of %d (rows written %d behind)", teams, g, float64(16*part4)/1024, slots, lag)}
	if in.SameOffset {
		l.Vec = 1
	} else {
		l.Note += "; x and y at different offsets from 16 bytes: single floats"
	}
	return l, nil
}

// SoftmaxStepByName finds a step.
func SoftmaxStepByName(name string) (SoftmaxStep, error) {
	for _, s := range SoftmaxSteps {
		if s.Name == name {
			return s, nil
		}
	}
	return SoftmaxStep{}, fmt.Errorf("lesson 04: no softmax step %q", name)
}

// checkSoftmaxShape refuses shapes no step takes: empty rows (softmax of nothing is undefined),
// and sizes past the kernels' 32-bit arguments and the grid.
func checkSoftmaxShape(rows, cols int) error {
	switch {
	case rows < 1:
		return fmt.Errorf("softmax: rows = %d: there must be at least one row", rows)
	case cols < 1:
		return fmt.Errorf("softmax: cols = %d: a row of length zero has no softmax (its sum is 0)", cols)
	case cols > math.MaxInt32 || rows > math.MaxInt32/MaxCluster:
		return fmt.Errorf("softmax: (%d, %d) is over the kernels' limits (cols < 2^31, rows < 2^28)", rows, cols)
	}
	return nil
}

// Refusal is a shape a step does not take, found by its plan before any launch.
type Refusal struct{ Err error }

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap is the plan's error.
func (r *Refusal) Unwrap() error { return r.Err }

// IsRefusal says whether err is a step's plan refusing a shape (not a failure of the run).
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// PlanSoftmax checks the shape, then asks step s for its launch. A shape it refuses is a *Refusal.
func PlanSoftmax(s SoftmaxStep, in SoftmaxInput) (SoftmaxLaunch, error) {
	if err := checkSoftmaxShape(in.Rows, in.Cols); err != nil {
		return SoftmaxLaunch{}, &Refusal{err}
	}
	if !slices.Contains(s.DTypes, in.DType) {
		return SoftmaxLaunch{}, &Refusal{fmt.Errorf("softmax step %s takes %v, not %s", s.Name, s.DTypes, in.DType)}
	}
	l, err := s.Plan(in)
	if err != nil {
		return l, &Refusal{err}
	}
	if l.Grid > math.MaxInt32 {
		return l, &Refusal{fmt.Errorf("softmax step %s on %s needs a grid of %d blocks, over the limit of 2^31 - 1", s.Name, shape(in.Rows, in.Cols), l.Grid)}
	}
	return l, nil
}

// SoftmaxWork is the minimum traffic of softmax: x read once, y written once; FLOPs are not counted
// (about 5 per element: a subtraction, an exp, an addition, a multiply, a comparison).
func SoftmaxWork(d DType, rows, cols int) bench.Work {
	return bench.Work{Bytes: 2 * float64(d.Size()) * float64(rows) * float64(cols)}
}

// Tensor is a device array of float32 or of 16-bit elements.
type Tensor struct {
	DType DType
	F32   *gpu.Buffer[float32]
	U16   *gpu.Buffer[uint16]
}

// DevicePtr is the tensor's address, for kernel arguments.
func (t Tensor) DevicePtr() uintptr {
	if t.DType == F32 {
		return t.F32.DevicePtr()
	}
	return t.U16.DevicePtr()
}

func allocTensor(s *gpu.Session, d DType, n int) (Tensor, error) {
	t := Tensor{DType: d}
	var err error
	if d == F32 {
		t.F32, err = gpu.Alloc[float32](s, n)
	} else {
		t.U16, err = gpu.Alloc[uint16](s, n)
	}
	return t, err
}

func (t Tensor) view(off, n int) (Tensor, error) {
	v := Tensor{DType: t.DType}
	var err error
	if t.DType == F32 {
		v.F32, err = t.F32.View(off, n)
	} else {
		v.U16, err = t.U16.View(off, n)
	}
	return v, err
}

func (t Tensor) upload(vals []float32) error {
	if t.DType == F32 {
		return t.F32.CopyFromHost(vals)
	}
	b := make([]uint16, len(vals))
	for i, v := range vals {
		b[i] = t.DType.Bits16(v)
	}
	return t.U16.CopyFromHost(b)
}

func (t Tensor) poison() error {
	if t.DType == F32 {
		return t.F32.Poison()
	}
	return t.U16.Poison() // gpu.Poison16: a NaN in half and in bfloat16 alike
}

// read copies elements [off, off+n) back as float64.
func (t Tensor) read(off, n int) ([]float64, error) {
	v, err := t.view(off, n)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	if t.DType == F32 {
		h, err := v.F32.ToHost()
		if err != nil {
			return nil, err
		}
		for i, x := range h {
			out[i] = float64(x)
		}
		return out, nil
	}
	h, err := v.U16.ToHost()
	if err != nil {
		return nil, err
	}
	for i, x := range h {
		out[i] = t.DType.Value16(x)
	}
	return out, nil
}

func (t Tensor) free() {
	if t.F32 != nil {
		t.F32.Free()
	}
	if t.U16 != nil {
		t.U16.Free()
	}
}

// nonFinite counts the NaN and Inf elements of t[0:n) on the GPU (util.cu).
func nonFinite(env *lab.Env, t Tensor, n int) (uint64, error) {
	src, err := kr.Source("util.cu")
	if err != nil {
		return 0, err
	}
	prog, err := env.Build(src, "count_nonfinite_f32", "count_nonfinite_16")
	if err != nil {
		return 0, err
	}
	count, err := gpu.Alloc[uint64](env.Session, 1)
	if err != nil {
		return 0, err
	}
	defer count.Free()
	if err := count.Zero(); err != nil {
		return 0, err
	}
	cfg := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(env.Session.Device, n, 256, 1)), Block: gpu.D1(256)}
	if t.DType == F32 {
		k, err := prog.Kernel("count_nonfinite_f32")
		if err == nil {
			err = k.Launch(cfg, t, int64(n), count)
		}
		if err != nil {
			return 0, err
		}
	} else {
		mask := uint32(0x7C00)
		if t.DType == BF16 {
			mask = 0x7F80
		}
		k, err := prog.Kernel("count_nonfinite_16")
		if err == nil {
			err = k.Launch(cfg, t, int64(n), mask, count)
		}
		if err != nil {
			return 0, err
		}
	}
	c, err := count.ToHost()
	if err != nil {
		return 0, err
	}
	return c[0], nil
}

// SoftmaxProblem is a softmax on the GPU: rows x cols inputs of fresh random values (uniform in
// [-4, 4), rounded to the dtype), an output, and the host copy of the inputs for the reference.
type SoftmaxProblem struct {
	DType      DType
	Rows, Cols int
	X, Y       Tensor
	x          []float32
	env        *lab.Env
	owned      []Tensor
	seed       uint64
	work       *gpu.Buffer[float32] // step 9's pairs
	ring       *gpu.Buffer[uint32]  // step 11's gave-up flag and mailbox
}

// NewSoftmaxProblem uploads fresh inputs. offset > 0 starts x and y that many elements into their
// allocations (offset 1 gives views that are not 16-byte aligned).
func NewSoftmaxProblem(env *lab.Env, d DType, rows, cols int, seed uint64, offset int) (*SoftmaxProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("softmax: running kernels needs a GPU (%s)", env.Mode)
	}
	if rows < 0 || cols < 0 || offset < 0 {
		return nil, fmt.Errorf("softmax: rows %d, cols %d, offset %d must not be negative", rows, cols, offset)
	}
	n := rows * cols
	p := &SoftmaxProblem{DType: d, Rows: rows, Cols: cols, env: env, seed: seed, x: Uniform(d, n, -4, 4, seed)}
	for _, dst := range []*Tensor{&p.X, &p.Y} {
		whole, err := allocTensor(env.Session, d, n+offset)
		if err != nil {
			p.Free()
			return nil, fmt.Errorf("softmax %s: %w", shape(rows, cols), err)
		}
		p.owned = append(p.owned, whole)
		if *dst, err = whole.view(offset, n); err != nil {
			p.Free()
			return nil, err
		}
	}
	if err := p.X.upload(p.x); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the buffers.
func (p *SoftmaxProblem) Free() {
	for _, t := range p.owned {
		t.free()
	}
	p.owned = nil
	if p.work != nil {
		p.work.Free()
		p.work = nil
	}
	if p.ring != nil {
		p.ring.Free()
		p.ring = nil
	}
}

// Reshape views the same elements as rows x cols (rows * cols must not exceed the problem's).
func (p *SoftmaxProblem) Reshape(rows, cols int) (*SoftmaxProblem, error) {
	n := rows * cols
	if n > p.Rows*p.Cols || rows < 1 || cols < 1 {
		return nil, fmt.Errorf("softmax: cannot view %d elements as %s", p.Rows*p.Cols, shape(rows, cols))
	}
	q := &SoftmaxProblem{DType: p.DType, Rows: rows, Cols: cols, env: p.env, seed: p.seed, x: p.x[:n]}
	var err error
	if q.X, err = p.X.view(0, n); err != nil {
		return nil, err
	}
	if q.Y, err = p.Y.view(0, n); err != nil {
		return nil, err
	}
	return q, nil
}

// Input is what a step's plan sees of this problem.
func (p *SoftmaxProblem) Input() SoftmaxInput {
	return SoftmaxInput{DType: p.DType, Rows: p.Rows, Cols: p.Cols, Aligned: gpu.Aligned(16, p.X, p.Y),
		SameOffset: p.X.DevicePtr()%16 == p.Y.DevicePtr()%16, Device: p.env.Session.Device}
}

// Plan is step s's launch on this problem.
func (p *SoftmaxProblem) Plan(s SoftmaxStep) (SoftmaxLaunch, error) {
	return PlanSoftmax(s, p.Input())
}

// Launcher compiles step s (or code, a reader's replacement of its file, when not empty) and
// returns a function that queues it.
func (p *SoftmaxProblem) Launcher(s SoftmaxStep, code string) (func() error, SoftmaxLaunch, *lab.Program, error) {
	plan, err := p.Plan(s)
	if err != nil {
		return nil, plan, nil, err
	}
	run, plan, prog, err := p.LaunchPlan(s, code, plan)
	return run, plan, prog, err
}

// LaunchPlan compiles step s (or code) with plan's defines and returns a function that queues
// plan's launch (both of step 9's, with the pairs in a scratch buffer the problem keeps), and the
// plan as launched (a persistent grid cut down to the clusters that fit).
func (p *SoftmaxProblem) LaunchPlan(s SoftmaxStep, code string, plan SoftmaxLaunch) (func() error, SoftmaxLaunch, *lab.Program, error) {
	run, prog, err := p.launchPlan(s, code, &plan)
	return run, plan, prog, err
}

func (p *SoftmaxProblem) launchPlan(s SoftmaxStep, code string, plan *SoftmaxLaunch) (func() error, *lab.Program, error) {
	src := compile.Source{Name: "edited_" + s.File, Code: code}
	var err error
	if code == "" {
		if src, err = kr.Source(s.File); err != nil {
			return nil, nil, err
		}
	}
	names := []string{plan.Kernel}
	if plan.Second != "" {
		names = append(names, plan.Second)
	}
	prog, err := p.env.BuildWith(src, compile.Options{Defines: plan.Defines}, names...)
	if err != nil {
		return nil, nil, err
	}
	k, err := prog.Kernel(plan.Kernel)
	if err != nil {
		return nil, prog, err
	}
	if plan.LargeCluster {
		if err := k.AllowLargeClusters(); err != nil {
			return nil, prog, err
		}
	}
	if plan.Cluster > 0 {
		active, err := clusterFits(k, *plan)
		if err != nil {
			return nil, prog, err
		}
		if plan.Persistent {
			plan.Grid = min(p.Rows, active) * plan.Cluster
			plan.Note += fmt.Sprintf("; %d persistent clusters", plan.Grid/plan.Cluster)
		}
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(plan.Block), SharedBytes: plan.Shared}
	if plan.Team > 0 {
		run, err := p.ringLauncher(k, cfg, *plan)
		return run, prog, err
	}
	if plan.Second == "" {
		args := []any{p.X, p.Y, int32(p.Rows), int32(p.Cols)}
		if plan.Vec >= 0 {
			args = append(args, plan.Vec)
		}
		return func() error { return k.Launch(cfg, args...) }, prog, nil
	}
	k2, err := prog.Kernel(plan.Second)
	if err != nil {
		return nil, prog, err
	}
	pairs, err := p.scratch(2 * p.Rows * plan.Chunks)
	if err != nil {
		return nil, prog, err
	}
	shape := []any{int32(p.Rows), int32(p.Cols), int32(plan.Chunks), int32(plan.Chunk4), plan.Vec}
	return func() error {
		if err := k.Launch(cfg, append([]any{p.X, pairs}, shape...)...); err != nil {
			return err
		}
		return k2.Launch(cfg, append([]any{p.X, pairs, p.Y}, shape...)...)
	}, prog, nil
}

// ringLauncher is step 11's launch: the driver must fit a block on every SM at once (the teams
// wait for each other), and the mailbox is zeroed before each run (queued).
func (p *SoftmaxProblem) ringLauncher(k *gpu.Kernel, cfg gpu.Config, plan SoftmaxLaunch) (func() error, error) {
	occ, err := k.Occupancy(plan.Block, plan.Shared)
	if err != nil {
		return nil, err
	}
	if occ.BlocksPerSM < 1 || plan.Grid > p.env.Session.Device.SMs {
		return nil, &Refusal{fmt.Errorf("softmax step 11 needs one block of %d threads with %d bytes of shared memory on each of %d SMs at once; the driver fits %d per SM (limited by %s)",
			plan.Block, plan.Shared, plan.Grid, occ.BlocksPerSM, occ.Limiter)}
	}
	// The gave-up flag, then (16 bytes on) the mailbox: 16 bytes per block and mailbox row.
	words := 4 + 4*plan.Ring*plan.Grid
	if p.ring != nil && p.ring.Len() < words {
		p.ring.Free()
		p.ring = nil
	}
	if p.ring == nil {
		if p.ring, err = gpu.Alloc[uint32](p.env.Session, words); err != nil {
			return nil, fmt.Errorf("softmax step 11: allocating its mailbox of %d bytes: %w", 4*words, err)
		}
	}
	failed, err := p.ring.View(0, 1)
	if err != nil {
		return nil, err
	}
	mail, err := p.ring.View(4, words-4)
	if err != nil {
		return nil, err
	}
	ring := p.ring
	return func() error {
		if err := ring.Zero(); err != nil {
			return err
		}
		return k.Launch(cfg, p.X, p.Y, int32(p.Rows), int32(p.Cols), plan.Vec, int32(plan.Team), int32(plan.Chunk4), mail, failed)
	}, nil
}

// RingFailed says whether step 11's last run gave up waiting for its team (its blocks were not all
// resident: another process holding SMs), as an error naming that; nil otherwise or for other
// steps. It reads one flag back, so it waits for the run.
func (p *SoftmaxProblem) RingFailed() error {
	return gaveUp(p.ring, 0, "softmax step 11: a block waited more than a second for its team's pairs", p.env)
}

// gaveUp reads the flag at buf[i] that a kernel's blocks set when they waited more than a second
// for blocks that were not resident (steps that need every block resident at once: layer norm's
// step 6, softmax's step 11), and returns an error saying what waited and why it may have happened;
// nil when the flag is clear or there is no buffer. It waits for the run.
func gaveUp(buf *gpu.Buffer[uint32], i int, what string, env *lab.Env) error {
	if buf == nil {
		return nil
	}
	v, err := buf.View(i, 1)
	if err != nil {
		return err
	}
	f, err := v.ToHost()
	if err != nil {
		return err
	}
	if f[0] != 0 {
		return fmt.Errorf("%s and gave up: not all %d blocks were resident at once (is another process using the GPU?)", what, env.Session.Device.SMs)
	}
	return nil
}

// clusterFits asks the driver how many clusters of plan's launch fit the GPU at once (a 16-block
// cluster of 1024-thread blocks needs 16 free SMs in one GPC), and refuses the launch before it
// happens when not even one does.
func clusterFits(k *gpu.Kernel, plan SoftmaxLaunch) (int, error) {
	n, err := k.MaxActiveClusters(plan.Grid, plan.Block, plan.Shared)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, &Refusal{fmt.Errorf("softmax %s: no cluster of this launch fits the GPU (%s, %d bytes of shared memory per block): the driver reports 0 active clusters", plan.Kernel, plan.Note, plan.Shared)}
	}
	return n, nil
}

// scratch returns a float32 buffer of at least n elements that the problem keeps until Free.
func (p *SoftmaxProblem) scratch(n int) (*gpu.Buffer[float32], error) {
	if p.work != nil && p.work.Len() >= n {
		return p.work, nil
	}
	if p.work != nil {
		p.work.Free()
	}
	var err error
	if p.work, err = gpu.Alloc[float32](p.env.Session, n); err != nil {
		return nil, fmt.Errorf("softmax: allocating %d floats of scratch: %w", n, err)
	}
	return p.work, nil
}

// MaxFullCheck is the largest output checked element by element in full; bigger ones are checked
// on SampleRows rows (the first, the last and random ones) plus a count of non-finite values over
// the whole output, so an unwritten element anywhere still fails.
const (
	MaxFullCheck = 1 << 22
	SampleRows   = 24
)

// checkedRows are the rows compared with the reference.
func (p *SoftmaxProblem) checkedRows() []int {
	if p.Rows*p.Cols <= MaxFullCheck {
		rows := make([]int, p.Rows)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	r := rand.New(rand.NewPCG(p.seed, 77))
	rows := []int{0, p.Rows - 1}
	for len(rows) < min(SampleRows, p.Rows) {
		rows = append(rows, r.IntN(p.Rows))
	}
	return rows
}

// CompareOutput compares the output already in Y with the float64 reference under tol (nil: the
// dtype's own tolerance) and counts non-finite values over the whole output.
func (p *SoftmaxProblem) CompareOutput(tol *check.Tolerance) (check.Result, error) {
	var got, want []float64
	for _, r := range p.checkedRows() {
		g, err := p.Y.read(r*p.Cols, p.Cols)
		if err != nil {
			return check.Result{}, err
		}
		got = append(got, g...)
		want = append(want, SoftmaxRow(p.x[r*p.Cols:(r+1)*p.Cols])...)
	}
	t := SoftmaxTolerance(p.DType, want)
	if tol != nil {
		t = *tol
	}
	res := check.Compare(got, want, t)
	if len(got) < p.Rows*p.Cols {
		bad, err := nonFinite(p.env, p.Y, p.Rows*p.Cols)
		if err != nil {
			return res, err
		}
		if bad > 0 {
			res.NonFinite += int(bad)
			res.OK = false
		}
	}
	return res, nil
}

// CheckRun runs a launch once on a NaN-poisoned output and compares it with the reference.
func (p *SoftmaxProblem) CheckRun(run func() error) (check.Result, error) {
	if err := p.Y.poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	return p.CompareOutput(nil)
}

// Check runs step s (or code) once on a poisoned output and compares it with the reference.
func (p *SoftmaxProblem) Check(s SoftmaxStep, code string) (check.Result, SoftmaxLaunch, error) {
	run, plan, _, err := p.Launcher(s, code)
	if err != nil {
		return check.Result{}, plan, err
	}
	res, err := p.CheckRun(run)
	if err == nil && plan.Team > 0 {
		err = p.RingFailed()
	}
	return res, plan, err
}

// Checked says what the check covered.
func (p *SoftmaxProblem) Checked() string {
	if p.Rows*p.Cols <= MaxFullCheck {
		return "every element"
	}
	return fmt.Sprintf("%d sampled rows + a NaN count of all", min(SampleRows, p.Rows))
}

// Measure checks step s, then times it, and returns its record.
func (p *SoftmaxProblem) Measure(caseName string, s SoftmaxStep, code, variant string) (record.Record, error) {
	if variant == "" {
		variant = s.Name
	}
	rec := record.Record{Case: caseName, Variant: variant, Kind: "kernel", DType: string(p.DType), Shape: shape(p.Rows, p.Cols), Size: int64(p.Cols)}
	res, plan, err := p.Check(s, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct, rec.Tol = res.RelL2, res.MaxAbs, res.OK, res.Tol.Name
	rec.Note = fmt.Sprintf("%s, grid %d x %d", plan.Kernel, plan.Grid, plan.Block)
	if plan.Note != "" {
		rec.Note += "; " + plan.Note
	}
	if !res.OK {
		return rec, fmt.Errorf("softmax %s %s %s: %w", s.Name, p.DType, shape(p.Rows, p.Cols), res.Err())
	}
	run, _, _, err := p.Launcher(s, code)
	if err != nil {
		return rec, err
	}
	rec, err = p.env.Measure(rec, SoftmaxWork(p.DType, p.Rows, p.Cols), run)
	if err == nil && plan.Team > 0 {
		err = p.RingFailed() // a timed run that gave up would have timed nothing real
	}
	return rec, err
}

package matmul

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// AnyShape is step 7 with predicated edge tiles: loads past the edges zero-filled, stores masked,
// rows that are not 16-byte aligned copied float by float. It takes any M, N, K at step 7's rate
// but for the partial tiles, and is what Multiply runs, on compute capability 8.0 and newer
// (cp.async), on a shape step 7 and the tensor-core steps do not take and at least SmallK deep. Its
// block tile depends on the shape (PlanAnyShape: 64 x 128 where those blocks fill the GPU, smaller
// where they do not), so it runs the build For the shape. It is not a rung of the ladder: the
// lesson measures it on the awkward shapes beside cuBLAS.
var AnyShape = Step{Name: anyShapeName, File: anyShapeFile, Kernel: anyShapeKernel, DType: "float32", SplitK: true,
	Idea: "step 7 with zero-filled loads past the edges and masked stores, smaller tiles and K split over idle SMs: any M, N, K",
	Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
		if err := needSM80(anyShapeName, d); err != nil {
			return gpu.Config{}, err
		}
		l := PlanAnyShape(s, d)
		return l.Tile.config(s, l.Slices), nil
	},
	Shaped: func(s Shape, d gpu.DeviceInfo) Step {
		l := PlanAnyShape(s, d)
		return anyShapeBuild(l.Tile, 0, l.Cluster)
	}}

const (
	anyShapeName   = "7b any shape"
	anyShapeFile   = "7b_any_shape.cu"
	anyShapeKernel = "mm_warptile_any"
)

// AnyShapeBK is the k depth of the any-shape step's tiles.
const AnyShapeBK = 16

// Tile is a block tile of the any-shape step: BM x BN outputs, computed by (BM/64) x (BN/32) warps
// of 64 x 32 (7b_any_shape.cu's BM and BN).
type Tile struct{ BM, BN int }

// AnyShapeTiles are the tiles the any-shape step's plan chooses from: the large tile first, 64 x 128
// (4 warps, the file's default), then the small ones, 64 x 64 (2 warps) and 64 x 32 (1 warp), for
// products whose large blocks leave SMs idle. On the H100, 64 x 128 beat 128 x 128 on every shape
// measured (1000 x 3000 x 777: 141.8 against 165.9 µs; 4095^3: 3.67 against 3.88 ms): 128 x 128
// needs 255 registers a thread, the others are capped at 168 and three blocks of 64 x 128 share an SM.
var AnyShapeTiles = []Tile{{64, 128}, {64, 64}, {64, 32}}

// Tiles are every tile 7b_any_shape.cu builds with: the plan's, and those the tuning test times
// beside them (128 x 128, the file's default before 64 x 128, and 128 x 64).
var Tiles = []Tile{{64, 128}, {128, 128}, {128, 64}, {64, 64}, {64, 32}}

// WaveWarps is how many warps per SM the any-shape plan counts as one wave: one block of the large
// tile, 64 x 128 (4 warps), two of 64 x 64, four of 64 x 32 (one 128 x 128 block, 8 warps, counts
// as a wave too). The SMs hold more (12 warps of these tiles: their registers are capped at 168),
// so a wave leaves room for the blocks of the next one to start while it drains.
const WaveWarps = 4

func (t Tile) String() string { return fmt.Sprintf("%dx%d", t.BM, t.BN) }

// Threads is the block size: a warp per 64 x 32 of the tile.
func (t Tile) Threads() int { return t.BM * t.BN / 64 }

// Defines build 7b_any_shape.cu with the tile: none for its default, 64 x 128.
func (t Tile) Defines() []string {
	if t == AnyShapeTiles[0] {
		return nil
	}
	return []string{fmt.Sprintf("BM=%d", t.BM), fmt.Sprintf("BN=%d", t.BN)}
}

// Blocks is how many tiles cover the M x N output of s.
func (t Tile) Blocks(s Shape) int { return gpu.CeilDiv(s.M, t.BM) * gpu.CeilDiv(s.N, t.BN) }

// Padded is how many outputs the tiles covering s compute, those past the edges included.
func (t Tile) Padded(s Shape) int64 {
	return int64(gpu.CeilDiv(s.M, t.BM)*t.BM) * int64(gpu.CeilDiv(s.N, t.BN)*t.BN)
}

// Wave is how many of the tile's blocks the plan counts as one wave on d: WaveWarps per SM.
func (t Tile) Wave(d gpu.DeviceInfo) int { return d.SMs * max(1, WaveWarps/(t.Threads()/32)) }

// Slices is how many slices of K the tile cuts s into on d: 1 when its blocks fill a wave, when K
// is under 4 k tiles, or on a device whose SM count is not known; else enough slices for about one
// wave, each at least 2 k tiles deep, none left empty.
func (t Tile) Slices(s Shape, d gpu.DeviceInfo) int {
	blocks, tiles, wave := t.Blocks(s), gpu.CeilDiv(s.K, AnyShapeBK), t.Wave(d)
	if d.SMs <= 0 || blocks >= wave || tiles < 4 {
		return 1
	}
	return evenSlices(tiles, min(gpu.CeilDiv(wave, blocks), tiles/2))
}

// evenSlices is about n slices of tiles k tiles, as many as cutting them into slices of
// ceil(tiles / n) gives: no slice is left empty (kTiles in the file is that depth).
func evenSlices(tiles, n int) int {
	n = max(1, min(n, tiles))
	return gpu.CeilDiv(tiles, gpu.CeilDiv(tiles, n))
}

// config is the launch of the tile on s with slices of K: one block per tile per slice.
func (t Tile) config(s Shape, slices int) gpu.Config {
	g := grid2(s, t.BM, t.BN)
	g.Z = slices
	return gpu.Config{Grid: g, Block: gpu.D1(t.Threads())}
}

// AnyShapeLaunch is what the any-shape step runs on a shape: its tile and its slices of K, and,
// when Cluster > 1, the slices are the blocks of a thread block cluster that add their partial tiles
// up in shared memory (7b_any_shape.cu's CLUSTER_K) rather than through a workspace.
type AnyShapeLaunch struct {
	Tile    Tile
	Slices  int
	Cluster int
}

// MaxClusterK is the most blocks a cluster of the any-shape step splits K over (the portable
// cluster size).
const MaxClusterK = 8

// Clusters reports whether the tile's partial outputs fit in the shared memory of its two pipeline
// stages, where a CLUSTER_K build parks them (64 x 64 and 64 x 32 do; 64 x 128 does not).
func (t Tile) Clusters() bool {
	return t.BM*t.BN <= 2*t.BM*(AnyShapeBK+4)+2*AnyShapeBK*t.BN
}

// clusterOf is the cluster that replaces slices of K on d: the largest of 8, 4 and 2 blocks not
// over slices, on compute capability 9.0 and newer for a tile that Clusters; 1 (none) otherwise.
func clusterOf(t Tile, slices int, d gpu.DeviceInfo) int {
	if d.CC() < 90 || !t.Clusters() {
		return 1
	}
	for c := MaxClusterK; c >= 2; c /= 2 {
		if c <= slices {
			return c
		}
	}
	return 1
}

// PlanAnyShape picks the any-shape step's launch for s on d. In one sentence: 64 x 128 tiles where
// they give every SM a block, else whichever of 64 x 64 and 64 x 32 computes fewer outputs past the
// edges (64 x 64 on a tie), with K cut into slices (at least 2 k tiles deep) until the blocks make
// about a wave of 4 warps per SM (Tile.Slices); on compute capability 9.0 the slices become a
// cluster of 8, 4 or 2 blocks of 64 x 64 that adds them up on chip (clusterOf). On the H100 (132
// SMs) that is 64 x 128 in one slice for 1000 x 3000 x 777 and 4095^3 (384 and 2048 blocks), 64 x 64
// in clusters of 8 for 255^3 and 513 x 129 x 1025, and 64 x 64 in one slice for 4097 x 64 x 16 (a
// single k tile); elsewhere 513 x 129 x 1025 takes 64 x 32 tiles (its 160 columns against 64 x
// 64's 192) through the workspace. Measured on the H100 (lessons/matmul's TestTune, the same run):
// 64 x 64 in a cluster of 8 took 24.1 µs at 513 x 129 x 1025 and 11.1 µs at 255^3, against 24.1 and
// 12.0 µs through the workspace and 27.0 and 11.1 µs for 64 x 32 in a cluster of 8. On a device
// whose SM count is not known: 64 x 128, one slice.
func PlanAnyShape(s Shape, d gpu.DeviceInfo) AnyShapeLaunch {
	t := AnyShapeTiles[0]
	if d.SMs > 0 && t.Blocks(s) < t.Wave(d) {
		t = AnyShapeTiles[1]
		for _, c := range AnyShapeTiles[2:] {
			if c.Padded(s) < t.Padded(s) {
				t = c
			}
		}
	}
	l := AnyShapeLaunch{Tile: t, Slices: t.Slices(s, d), Cluster: 1}
	if l.Slices > 1 && d.CC() >= 90 {
		small := AnyShapeTiles[1] // 64 x 64: as fast or faster in clusters than 64 x 32
		if c := clusterOf(small, small.Slices(s, d), d); c > 1 {
			l = AnyShapeLaunch{Tile: small, Slices: c, Cluster: c}
		}
	}
	return l
}

// WorkspaceBytes is the device memory of the split-K workspace (Slices partial products of M x N
// floats, which mm_sum_slices adds up into C): 0 for one slice and for a cluster, whose blocks add
// their slices up in shared memory. It is allocated on the first run and kept with the problem.
// Slices stop at about a wave of blocks, so it stays under 2 x Wave x BM x BN floats (8.7 MB on an
// H100).
func (l AnyShapeLaunch) WorkspaceBytes(s Shape) int64 {
	if l.Slices <= 1 || l.Cluster > 1 {
		return 0
	}
	return 4 * int64(l.Slices) * int64(s.M) * int64(s.N)
}

// SplitKSlices is how many slices of K the any-shape step cuts s into on d (PlanAnyShape).
func SplitKSlices(s Shape, d gpu.DeviceInfo) int { return PlanAnyShape(s, d).Slices }

// AnyShapeWith is the any-shape step built with tile t, its slices added up through the workspace.
// Its plan splits K as Tile.Slices does, or, when slices > 0, into that many slices (rounded so that
// none is empty): the tuning test's choices.
func AnyShapeWith(t Tile, slices int) Step { return anyShapeBuild(t, slices, 1) }

// AnyShapeClustered is the any-shape step built with tile t and CLUSTER_K = cluster: K in cluster
// slices, the blocks of one thread block cluster, added up in their shared memory (compute
// capability 9.0; tiles that Clusters).
func AnyShapeClustered(t Tile, cluster int) Step { return anyShapeBuild(t, cluster, cluster) }

// anyShapeBuild is the any-shape step built with tile t; cluster > 1 adds -DCLUSTER_K and fixes the
// slices at cluster, else slices > 0 fixes them and 0 leaves them to Tile.Slices.
func anyShapeBuild(t Tile, slices, cluster int) Step {
	name, defines := anyShapeName+" "+t.String(), t.Defines()
	if cluster > 1 {
		name += fmt.Sprintf(", cluster of %d", cluster)
		defines = append(append([]string{}, defines...), fmt.Sprintf("CLUSTER_K=%d", cluster))
	} else if slices > 0 {
		name += fmt.Sprintf(", %d slices", slices)
	}
	return Step{Name: name, File: anyShapeFile, Kernel: anyShapeKernel, DType: "float32", SplitK: true, Defines: defines,
		Idea: fmt.Sprintf("the any-shape step with %s block tiles", t),
		Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
			if err := needSM80(name, d); err != nil {
				return gpu.Config{}, err
			}
			if cluster > 1 {
				if err := gpu.NeedCC("matmul "+name, d, 90, "thread block clusters"); err != nil {
					return gpu.Config{}, err
				}
				if !t.Clusters() || cluster > MaxClusterK {
					return gpu.Config{}, fmt.Errorf("matmul %s: a cluster of %d blocks of %s tiles does not fit (the tile's outputs must fit in its stages' shared memory: 64 x 64 or 64 x 32; at most %d blocks)", name, cluster, t, MaxClusterK)
				}
				return t.config(s, cluster), nil
			}
			n := t.Slices(s, d)
			if slices > 0 {
				n = evenSlices(gpu.CeilDiv(s.K, AnyShapeBK), slices)
			}
			return t.config(s, n), nil
		}}
}

// clusterK is the CLUSTER_K of a build of the any-shape step: 1 when it has none.
func (st Step) clusterK() int {
	for _, d := range st.Defines {
		var n int
		if _, err := fmt.Sscanf(d, "CLUSTER_K=%d", &n); err == nil {
			return n
		}
	}
	return 1
}

// SmallK is the depth below which a product is all output: Multiply runs ThinK on it (C written at
// nearly the write bandwidth) rather than tiles of 16 k that are mostly zeros.
const SmallK = 8

// ThinK is step 7c, for products less than SmallK deep: a thread per column of C keeps that column's
// K values of B in registers and walks down the rows, the A values of a row broadcast to the warp,
// each output written once with a streaming store. A grid of about ThinKBlocksPerSM blocks per SM
// loops over the rows. It runs on every GPU and is not a rung of the ladder: Multiply's pick where K
// is 1 to 7, measured on the awkward shapes beside cuBLAS.
var ThinK = Step{Name: ThinKName, File: "7c_thin_k.cu", Kernel: "mm_thin_k", DType: "float32",
	Idea: "K < 8: B's column in registers, rows looped over by a few blocks per SM, streaming stores: the speed of writing C",
	Plan: thinKPlan}

// ThinKBlocksPerSM is the thin-K grid's blocks of 256 threads per SM: one wave, which the kernel's
// launch bounds (4 blocks, at most 64 registers a thread) guarantee fits.
const ThinKBlocksPerSM = 4

// thinKPlan refuses K >= SmallK, naming the limit, and launches blocks of 32 columns x 8 rows.
func thinKPlan(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
	if s.K >= SmallK {
		return gpu.Config{}, fmt.Errorf("matmul %s: %v is %d deep; it keeps K values of B in registers and takes K < %d (SmallK); use 7b any shape or Multiply, which take any K",
			ThinKName, s, s.K, SmallK)
	}
	return gpu.Config{Grid: thinKGrid(s, d), Block: gpu.D2(32, 8)}, nil
}

// ThinKName is the thin-K step's name.
const ThinKName = "7c thin K"

// thinKGrid covers the N columns with blocks of 32, and the rows with as many blocks (each 8 rows
// at a time) as keep the grid within one wave of ThinKBlocksPerSM blocks per SM: a partial second
// wave would double the time, since every block has the same rows to write. On a device whose SM
// count is not known, a block per 64 rows.
func thinKGrid(s Shape, d gpu.DeviceInfo) gpu.Dim {
	gx := gpu.CeilDiv(s.N, 32)
	gy := gpu.CeilDiv(s.M, 64)
	if d.SMs > 0 {
		gy = ThinKBlocksPerSM * d.SMs / gx
	}
	return gpu.D2(gx, max(1, min(gy, gpu.CeilDiv(s.M, 8), maxGridY)))
}

// maxGridY is the largest grid dimension y.
const maxGridY = 65535

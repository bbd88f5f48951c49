package matmul

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// WarpTileBuild is a build of step 7's file, 7_warptile.cu, by its tuning defines. The zero value is
// the step as the ladder runs it: 128 x 128 block tiles of 8 warp tiles of 64 x 32, the A tile's
// rows swizzled, k tiles 32 deep, a 3-stage cp.async pipeline where 3 stages fit in a block's
// shared memory and 2 where only 2 do (Step.StagesOn, as the tensor-core steps), one block per SM
// asked of the compiler. A field set to a value is that value on every GPU, and the build names it
// (Defines): WarpTileBuild{Padded: true} is the A layout before the swizzle.
type WarpTileBuild struct {
	Stages    int  // cp.async pipeline depth: 0 for the ladder's (3 where they fit, else 2), or 2, 3, 4
	BK        int  // k depth of a tile: 0 for the ladder's 32, or 16, 32
	MinBlocks int  // blocks per SM asked of the compiler: 0 or 1 for one; 2 caps a thread's registers
	BN        int  // block tile columns: 0 for the ladder's 128, or 128, 256
	WN        int  // warp tile columns: 0 for the ladder's 32 (8 x 8 outputs a thread), or 32, 64 (8 x 16)
	Padded    bool // the A tile's rows padded to BK + 4 words instead of swizzled
}

// The file's defaults (the ladder's build where 3 stages fit), and the most static shared memory a
// block may have.
const (
	WarpTileBK   = 32
	WarpTileBN   = 128
	WarpTileWN   = 32
	staticShared = 48 << 10
)

// WarpTileStage is the shared memory of one pipeline stage of the ladder's step 7 (a 128 x 32 tile
// of A and a 32 x 128 tile of B): 32,768 bytes; 3 stages are 96 KiB, 2 are 64 KiB.
const WarpTileStage = 4 * (128*WarpTileBK + WarpTileBK*WarpTileBN)

// bk, bn and wn are the build's k depth, block tile width and warp tile width: a field left at 0
// is the file's default.
func (b WarpTileBuild) bk() int { return cmp.Or(b.BK, WarpTileBK) }
func (b WarpTileBuild) bn() int { return cmp.Or(b.BN, WarpTileBN) }
func (b WarpTileBuild) wn() int { return cmp.Or(b.WN, WarpTileWN) }

// Threads is the build's block size: two warp rows of BN/WN warp tiles of 64 x WN.
func (b WarpTileBuild) Threads() int { return 2 * b.bn() / b.wn() * 32 }

// Defines are the -D flags of the build: one for each field that is set (none for the zero value,
// which the file's defaults build, with STAGES=2 added by Step.DefinesOn where 3 stages do not fit).
func (b WarpTileBuild) Defines() []string {
	var out []string
	for _, d := range []struct {
		name string
		v    int
	}{{"BN", b.BN}, {"WN", b.WN}, {"MIN_BLOCKS", b.MinBlocks}, {"STAGES", b.Stages}, {"BK", b.BK}} {
		if d.v > 0 && (d.name != "MIN_BLOCKS" || d.v > 1) {
			out = append(out, fmt.Sprintf("%s=%d", d.name, d.v))
		}
	}
	if b.Padded {
		out = append(out, "PADDED")
	}
	return out
}

// StageBytes is the shared memory of one pipeline stage: a 128 x BK tile of A (its rows swizzled,
// or padded by 4 words) and a BK x BN tile of B.
func (b WarpTileBuild) StageBytes() int {
	row := b.bk()
	if b.Padded {
		row += 4
	}
	return 4 * (128*row + b.bk()*b.bn())
}

// StagesOn is the pipeline depth the build runs with on d: its Stages when set, else the ladder's
// choice (Step.StagesOn: 3, 2 where only 2 fit, 0 where not even 2 do).
func (b WarpTileBuild) StagesOn(d gpu.DeviceInfo) int {
	if b.Stages > 0 {
		return b.Stages
	}
	return Step{StageBytes: b.StageBytes()}.StagesOn(d)
}

// SharedBytes is the dynamic shared memory the build's launch asks for with n stages: 0 when they
// fit in 48 KiB, which the file then declares static (2 or 3 stages of BK = 16 in 128 x 128 blocks),
// else all of them (the file's DYNAMIC_SMEM rule).
func (b WarpTileBuild) SharedBytes(n int) int {
	if n*b.StageBytes() <= staticShared {
		return 0
	}
	return n * b.StageBytes()
}

// Name is the step's name with the build's defines: "7 warp tile" for the zero value, else, for
// example, "7 warp tile [STAGES=2 BK=16]".
func (b WarpTileBuild) Name() string {
	if defs := b.Defines(); len(defs) > 0 {
		return "7 warp tile [" + strings.Join(defs, " ") + "]"
	}
	return "7 warp tile"
}

// Step is the build as a step: step 7 of the ladder for the zero value. A build whose depth follows
// the GPU (Stages 0) has StageBytes, so that Step.DefinesOn builds it with STAGES=2 where 3 stages
// do not fit, and DepthNote says so; one that fixes its depth has it as the step's Stages.
func (b WarpTileBuild) Step() Step {
	st := Step{Name: b.Name(), File: "7_warptile.cu", Kernel: "mm_warptile", DType: "float32", Defines: b.Defines(),
		Idea: "64x32 warp tiles, k tiles 32 deep in a 3-stage cp.async pipeline, a swizzled A tile: conflict-free float4 shared loads",
		Plan: b.plan()}
	if b.Stages == 0 {
		st.StageBytes = b.StageBytes()
	} else {
		st.Stages = b.Stages
	}
	return st
}

// plan is the build's pipelined plan (pipelinedPlan): its depth on the GPU (StagesOn), and dynamic
// shared memory only where its stages are over 48 KiB (SharedBytes).
func (b WarpTileBuild) plan() func(Shape, gpu.DeviceInfo) (gpu.Config, error) {
	return pipelinedPlan(b.Name(), b.bn(), b.bk(), b.Threads(), b.StageBytes(), b.StagesOn, b.SharedBytes)
}

// WarpTileBuilds are the builds of step 7 the tuning test times beside the step itself: the A tile
// padded instead of swizzled (the layout before), wider warp tiles (64 x 64, 8 x 16 outputs a
// thread) in 128 x 256 blocks and in 128 x 128 blocks two per SM, registers capped for two blocks
// per SM, and every other pipeline depth and k depth (2, 3, 4 stages of 16 or 32).
func WarpTileBuilds() []WarpTileBuild {
	out := []WarpTileBuild{{Padded: true}, {BN: 256, WN: 64}, {WN: 64, MinBlocks: 2}, {MinBlocks: 2}}
	for _, stages := range []int{2, 3, 4} {
		for _, bk := range []int{16, 32} {
			if stages != 3 || bk != 32 {
				out = append(out, WarpTileBuild{Stages: stages, BK: bk})
			}
		}
	}
	return out
}

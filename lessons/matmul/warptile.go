package matmul

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// WarpTileBuild is a build of step 7's file, 7_warptile.cu, by its tuning defines. The zero value is
// the step as the ladder runs it: k tiles 32 deep, a 3-stage cp.async pipeline where 3 stages fit
// in a block's shared memory and 2 where only 2 do (Step.StagesOn, as the tensor-core steps), no
// swizzle, one block per SM asked of the compiler. A field set to a value is that value on every
// GPU, and the build names it (Defines): WarpTileBuild{Stages: 2, BK: 16} is the step's first form.
type WarpTileBuild struct {
	Stages    int // cp.async pipeline depth: 0 for the ladder's (3 where they fit, else 2), or 2, 3, 4
	BK        int // k depth of a tile: 0 for the ladder's 32, or 16, 32
	Swizzle   int // block rows the launch order walks at a time: 0 or 1 for none
	MinBlocks int // blocks per SM asked of the compiler: 0 or 1 for one; 2 caps registers at 128
}

// The file's defaults (the ladder's build where 3 stages fit), and the most static shared memory a
// block may have.
const (
	WarpTileBK   = 32
	staticShared = 48 << 10
)

// WarpTileStage is the shared memory of one pipeline stage of the ladder's step 7 (BK = 32):
// 34,816 bytes; 3 stages are 102 KiB, 2 are 68 KiB.
const WarpTileStage = 4 * (128*(WarpTileBK+4) + WarpTileBK*128)

// bk is the build's k depth.
func (b WarpTileBuild) bk() int {
	if b.BK == 0 {
		return WarpTileBK
	}
	return b.BK
}

// Defines are the -D flags of the build: one for each field that is set (none for the zero value,
// which the file's defaults build, with STAGES=2 added by Step.DefinesOn where 3 stages do not fit).
func (b WarpTileBuild) Defines() []string {
	var out []string
	if b.MinBlocks > 1 {
		out = append(out, fmt.Sprintf("MIN_BLOCKS=%d", b.MinBlocks))
	}
	if b.Stages > 0 {
		out = append(out, fmt.Sprintf("STAGES=%d", b.Stages))
	}
	if b.BK > 0 {
		out = append(out, fmt.Sprintf("BK=%d", b.BK))
	}
	if b.Swizzle > 1 {
		out = append(out, fmt.Sprintf("SWIZZLE=%d", b.Swizzle))
	}
	return out
}

// StageBytes is the shared memory of one pipeline stage: a 128 x BK tile of A in rows of BK + 4
// floats and a BK x 128 tile of B.
func (b WarpTileBuild) StageBytes() int { return 4 * (128*(b.bk()+4) + b.bk()*128) }

// StagesOn is the pipeline depth the build runs with on d: its Stages when set, else the ladder's
// choice (Step.StagesOn: 3, 2 where only 2 fit, 0 where not even 2 do).
func (b WarpTileBuild) StagesOn(d gpu.DeviceInfo) int {
	if b.Stages > 0 {
		return b.Stages
	}
	return Step{StageBytes: b.StageBytes()}.StagesOn(d)
}

// SharedBytes is the dynamic shared memory the build's launch asks for with n stages: 0 when they
// fit in 48 KiB, which the file then declares static (2 stages of BK = 16, 36 KiB), else all of
// them (the file's DYNAMIC_SMEM rule: any depth of BK = 32, 3 or more stages of BK = 16).
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
// do not fit, and DepthNote says so.
func (b WarpTileBuild) Step() Step {
	st := Step{Name: b.Name(), File: "7_warptile.cu", Kernel: "mm_warptile", DType: "float32", Defines: b.Defines(),
		Idea: "64x32 warp tiles, k tiles 32 deep in a 3-stage cp.async pipeline, conflict-free float4 shared loads",
		Plan: b.plan()}
	if b.Stages == 0 {
		st.StageBytes = b.StageBytes()
	}
	return st
}

// plan is the build's pipelined plan (pipelinedPlan): its depth on the GPU (StagesOn), and dynamic
// shared memory only where its stages are over 48 KiB (SharedBytes).
func (b WarpTileBuild) plan() func(Shape, gpu.DeviceInfo) (gpu.Config, error) {
	return pipelinedPlan(b.Name(), b.bk(), b.StageBytes(), b.StagesOn, b.SharedBytes)
}

// WarpTileBuilds are the builds of step 7 the tuning test times beside the step itself: every
// pipeline depth (2, 3, 4) with k tiles 16 and 32 deep, and the ladder's build with registers capped
// for two blocks per SM. (Swizzled launch orders, never faster on the H100, are no longer timed.)
func WarpTileBuilds() []WarpTileBuild {
	var out []WarpTileBuild
	for _, stages := range []int{2, 3, 4} {
		for _, bk := range []int{16, 32} {
			out = append(out, WarpTileBuild{Stages: stages, BK: bk})
		}
	}
	return append(out, WarpTileBuild{MinBlocks: 2})
}

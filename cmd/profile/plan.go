package main

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/giou"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
	"github.com/cudalessons/cudalessons/lessons/reduce"
	"github.com/cudalessons/cudalessons/lessons/rwkv"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
	"github.com/cudalessons/cudalessons/lessons/vecadd"
)

// lesson is how the child process runs a lesson's step once: the lesson's own Try cell with the
// original code (checked, then timed by the quick method), and how its steps are named.
type lesson struct {
	ID      string
	Kernels string // the folder of its CUDA sources, kernels/<Kernels>
	Try     func(env *lab.Env, step, code string) error
	Step    func(name string) error // nil when the step exists
}

func stepOf[S any](find func(string) (S, error)) func(string) error {
	return func(name string) error { _, err := find(name); return err }
}

var lessons = []lesson{
	{vecadd.ID, "vecadd", vecadd.Try, stepOf(vecadd.StepByName)},
	{rwkv.ID, "rwkv", rwkv.Try, stepOf(rwkv.StepByName)},
	{oneflow.ID, "oneflow", oneflow.Try, stepOf(oneflow.MulStepByName)},
	{matmul.ID, "matmul", matmul.Try, stepOf(matmul.StepByName)},
	{reduce.ID, "reduce", reduce.TrySoftmax, stepOf(reduce.SoftmaxStepByName)},
	{conv.ID, "conv", conv.Try, stepOf(conv.StepByName)},
	{giou.ID, "giou", giou.Try, stepOf(giou.StepByName)},
	{trilinear.ID, "trilinear", trilinear.Try, stepOf(trilinear.StepByName)},
	{hopper.ID, "hopper", hopper.Try, stepOf(hopper.StepByName)},
}

func lessonByID(id string) (lesson, bool) {
	for _, l := range lessons {
		if l.ID == id {
			return l, true
		}
	}
	return lesson{}, false
}

// Target is one step to profile: which kernel of its run, with what, and the question it answers.
type Target struct {
	Lesson, Step string
	Kernel       string // a regular expression over kernel names
	// Launches is how many matching launches to profile; the largest (grid times block) is kept:
	// a Try cell checks small shapes before the lesson's own.
	Launches int
	Sections []string
	Metrics  []string // metrics beyond the sections (those this GPU's ncu lacks are dropped)
	// Like are patterns over metric base names: every one this GPU's ncu has is collected (.sum).
	Like     []string
	Question string
}

var (
	memory    = []string{nsight.SpeedOfLight, nsight.MemoryWorkloadAnalysis, nsight.LaunchStats, nsight.Occupancy, nsight.WarpStateStats}
	compute   = []string{nsight.SpeedOfLight, nsight.ComputeWorkload, nsight.MemoryWorkloadAnalysis, nsight.LaunchStats, nsight.Occupancy, nsight.WarpStateStats}
	dram      = []string{"dram__bytes_read.sum", "dram__bytes_write.sum"}
	banks     = []string{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"}
	pipes     = []string{"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"}
	hopperMMA = []string{"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"}
)

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Targets are the profiles make profile records: for each lesson, the steps whose claim matters most.
var Targets = []Target{
	{Lesson: vecadd.ID, Step: "naive", Kernel: "^add_naive$", Launches: 1, Sections: memory, Metrics: dram,
		Question: "how close 4-byte loads come to the DRAM peak"},
	{Lesson: vecadd.ID, Step: "float4", Kernel: "^add_float4$", Launches: 1, Sections: memory, Metrics: dram,
		Question: "whether 16-byte loads move the same bytes closer to the DRAM peak"},
	{Lesson: rwkv.ID, Step: "v4 balanced", Kernel: "^rwkv_fwd_v4$", Launches: 3, Sections: compute, Metrics: pipes,
		Question: "where the FP32 step's warps wait once the work is balanced"},
	{Lesson: oneflow.ID, Step: "packed", Kernel: "^mul_pack(ed|1)_f(32|16)$", Launches: 3, Sections: memory, Metrics: dram,
		Question: "bytes in flight: DRAM throughput and the long-scoreboard stalls of the packed multiply"},
	{Lesson: matmul.ID, Step: "6", Kernel: "^mm_vectorized$", Launches: 3, Sections: cat(compute, []string{nsight.SourceCounters}), Metrics: cat(banks, pipes),
		Question: "shared-memory bank conflicts of the padded, transposed A tile"},
	{Lesson: matmul.ID, Step: "7", Kernel: "^mm_warptile$", Launches: 3, Sections: cat(compute, []string{nsight.SourceCounters}), Metrics: cat(banks, pipes),
		Question: "bank conflicts and FMA pipe use of the warp tile"},
	{Lesson: matmul.ID, Step: "8", Kernel: "^mm_tf32$", Launches: 3, Sections: compute, Metrics: cat(banks, pipes),
		Question: "how busy mma.sync keeps the tensor pipe"},
	{Lesson: reduce.ID, Step: "5 cluster, read once", Kernel: "^softmax_cluster$", Launches: 10, Sections: memory, Metrics: dram, Like: []string{"dsmem", "dshared", "distributed"},
		Question: "the cluster's distributed shared memory traffic beside its DRAM traffic"},
	{Lesson: conv.ID, Step: "5 cp.async TF32", Kernel: "^conv_cpasync_tf32$", Launches: 3, Sections: compute, Metrics: pipes,
		Question: "the implicit GEMM's tensor-pipe use"},
	{Lesson: giou.ID, Step: "1 article", Kernel: "^giou_article$", Launches: 3, Sections: memory,
		Question: "where a launch-bound kernel's time goes: a short kernel on a grid too small for the GPU"},
	{Lesson: trilinear.ID, Step: "3 float4", Kernel: "^tri_fw_float4$", Launches: 3, Sections: memory, Metrics: cat(dram, []string{"lts__t_sector_op_read_hit_rate.pct"}),
		Question: "L2 hit rates of the gathers"},
	{Lesson: hopper.ID, Step: "2 TMA ring", Kernel: "^hg_tma$", Launches: 3, Sections: compute, Metrics: hopperMMA, Like: []string{"tma", "gmma"},
		Question: "how busy wgmma keeps the tensor pipe, fed by TMA"},
}

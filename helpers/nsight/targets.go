package nsight

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Target is what to profile of one lesson's step: which kernel of its run, with what, and the
// question the profile answers.
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
	memory    = []string{SpeedOfLight, MemoryWorkloadAnalysis, LaunchStats, Occupancy, WarpStateStats}
	compute   = []string{SpeedOfLight, ComputeWorkload, MemoryWorkloadAnalysis, LaunchStats, Occupancy, WarpStateStats}
	dram      = []string{"dram__bytes_read.sum", "dram__bytes_write.sum"}
	banks     = []string{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"}
	pipes     = []string{"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"}
	hopperMMA = []string{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
		"sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor_op_gmma.sum",
		"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"}
)

// hopperMMA and hopperTMA are Hopper's wgmma and TMA by the names Nsight Compute 2025.3 has for
// compute capability 9.0 (it has no sm__pipe_tensor_op_gmma_cycles_active): the tensor pipe's
// active cycles (every tensor instruction, wgmma included), the wgmma instructions' share of the
// pipe's issue rate and their count, the mma counter kept beside them; and what TMA loaded into
// shared memory (bytes) and how busy its unit was.
var hopperTMA = []string{"l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum", "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active"}

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Targets are the profiles the suite records (make profile, results/profiles): for each lesson,
// the steps whose claim matters most, by the lesson's ID and the step's name. A reader's profile of
// a step (lab's Profile) takes the same sections and metrics (ForStep).
var Targets = []Target{
	{Lesson: "00_setup", Step: "naive", Kernel: "^add_naive$", Launches: 1, Sections: memory, Metrics: dram,
		Question: "how close 4-byte loads come to the DRAM peak"},
	{Lesson: "00_setup", Step: "float4", Kernel: "^add_float4$", Launches: 1, Sections: memory, Metrics: dram,
		Question: "whether 16-byte loads move the same bytes closer to the DRAM peak"},
	{Lesson: "01_rwkv", Step: "v4 balanced", Kernel: "^rwkv_fwd_v4$", Launches: 3, Sections: compute, Metrics: pipes,
		Question: "where the FP32 step's warps wait once the work is balanced"},
	{Lesson: "02_oneflow", Step: "packed", Kernel: "^mul_pack(ed|1)_f(32|16)$", Launches: 3, Sections: memory, Metrics: dram,
		Question: "bytes in flight: DRAM throughput and the long-scoreboard stalls of the packed multiply"},
	{Lesson: "03_matmul", Step: "6", Kernel: "^mm_vectorized$", Launches: 3, Sections: cat(compute, []string{SourceCounters}), Metrics: cat(banks, pipes),
		Question: "shared-memory bank conflicts of the padded, transposed A tile"},
	{Lesson: "03_matmul", Step: "7", Kernel: "^mm_warptile$", Launches: 3, Sections: cat(compute, []string{SourceCounters}), Metrics: cat(banks, pipes),
		Question: "bank conflicts and FMA pipe use of the warp tile"},
	{Lesson: "03_matmul", Step: "8", Kernel: "^mm_tf32$", Launches: 3, Sections: compute, Metrics: cat(banks, pipes),
		Question: "how busy mma.sync keeps the tensor pipe"},
	{Lesson: "04_reductions", Step: "5 cluster, read once", Kernel: "^softmax_cluster$", Launches: 10, Sections: memory, Metrics: dram, Like: []string{"dsmem", "dshared", "distributed"},
		Question: "the cluster's distributed shared memory traffic beside its DRAM traffic"},
	{Lesson: "05_conv", Step: "5 cp.async TF32", Kernel: "^conv_cpasync_tf32$", Launches: 3, Sections: compute, Metrics: pipes,
		Question: "the implicit GEMM's tensor-pipe use"},
	{Lesson: "06_giou", Step: "1 article", Kernel: "^giou_article$", Launches: 3, Sections: memory,
		Question: "where a launch-bound kernel's time goes: a short kernel on a grid too small for the GPU"},
	{Lesson: "07_trilinear", Step: "3 float4", Kernel: "^tri_fw_float4$", Launches: 3, Sections: memory, Metrics: cat(dram, []string{"lts__t_sector_op_read_hit_rate.pct"}),
		Question: "L2 hit rates of the gathers"},
	{Lesson: "08_hopper", Step: "2 TMA ring", Kernel: "^hg_tma$", Launches: 3, Sections: compute, Metrics: cat(hopperMMA, hopperTMA),
		Question: "how busy wgmma keeps the tensor pipe, fed by TMA"},
}

// ForStep is the target of a lesson's step for a profile of any of its steps (a reader's edit, a
// step the suite does not record): the step's own target when it has one; otherwise the lesson's
// first target's sections and metrics (the lesson's question) with no kernel filter and no
// question of its own; otherwise the memory sections. kernels, when given, replace the filter:
// exactly those names (the kernels the step compiled).
func ForStep(lesson, step string, kernels []string) Target {
	t := Target{Lesson: lesson, Step: step, Launches: 3, Sections: memory, Metrics: dram}
	found := false
	for _, c := range Targets {
		if c.Lesson == lesson && c.Step == step {
			t, found = c, true
			break
		}
	}
	if !found {
		for _, c := range Targets {
			if c.Lesson == lesson {
				t = c
				t.Step, t.Kernel, t.Question, t.Launches = step, "", "", max(c.Launches, 3)
				break
			}
		}
	}
	if len(kernels) > 0 {
		quoted := make([]string, len(kernels))
		for i, k := range kernels {
			quoted[i] = regexp.QuoteMeta(k)
		}
		t.Kernel = "^(" + strings.Join(quoted, "|") + ")$"
	}
	return t
}

// Runner runs the profiled program once under ncu with opts and returns what ncu found. An error
// that wraps context.DeadlineExceeded (the run took too long) or a *CountersError is final: Collect
// does not try again.
type Runner func(opts Options) (*Result, error)

// Collect profiles one target with run: the target's sections, its metrics that this ncu knows
// (known, from KnownMetrics; nil keeps all) and the warp stall reasons; when ncu fails with the
// extra metrics, once more with the sections alone, and the profile says so. It keeps the largest
// of the profiled launches.
func Collect(t Target, known map[string]bool, run Runner) (*Profile, error) {
	metrics, dropped := PickMetrics(t, known)
	opts := Options{Kernel: t.Kernel, LaunchCount: max(1, t.Launches), Sections: t.Sections,
		Metrics: append(metrics, StallMetrics)}
	res, err := run(opts)
	note := ""
	if len(dropped) > 0 {
		note = "Not collected (this Nsight Compute has no such metric): " + strings.Join(dropped, ", ") + "."
	}
	var ce *CountersError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, context.DeadlineExceeded) {
		first := err
		opts.Metrics = nil
		res, err = run(opts)
		if err == nil {
			note = strings.TrimSpace(note + " The extra metrics made ncu fail, so only the sections were collected: " + firstLine(first.Error()))
		}
	}
	if err != nil {
		return nil, err
	}
	if len(res.Kernels) == 0 {
		return nil, errors.New("ncu profiled no launch of " + t.Kernel)
	}
	return &Profile{Step: t.Step, Question: t.Question, Kernel: Largest(res.Kernels), Sections: t.Sections, Note: note}, nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// Largest is the profiled launch with the most threads (grid times block): the lesson's own shape,
// not the small shapes a Try cell checks first. ks must not be empty.
func Largest(ks []Kernel) Kernel {
	best, bestN := ks[0], -1
	for _, k := range ks {
		if n := threads(k.Grid) * threads(k.Block); n > bestN {
			best, bestN = k, n
		}
	}
	return best
}

var dims = regexp.MustCompile(`\d+`)

// threads multiplies the numbers of "(256, 1, 1)".
func threads(s string) int {
	n := 1
	for _, d := range dims.FindAllString(s, -1) {
		v, _ := strconv.Atoi(d)
		n *= v
	}
	return n
}

// PickMetrics keeps the target's metrics whose base name this ncu knows (all of them when known is
// nil) and adds the .sum of every known base name that Like matches (at most 6).
func PickMetrics(t Target, known map[string]bool) (keep, dropped []string) {
	for _, m := range t.Metrics {
		base, _, _ := strings.Cut(m, ".")
		if known == nil || known[base] {
			keep = append(keep, m)
		} else {
			dropped = append(dropped, m)
		}
	}
	if known == nil || len(t.Like) == 0 {
		return keep, dropped
	}
	var like []string
	for base := range known {
		for _, l := range t.Like {
			if strings.Contains(base, l) && strings.Contains(base, "bytes") {
				like = append(like, base+".sum")
				break
			}
		}
	}
	slices.Sort(like)
	if len(like) > 6 {
		like = like[:6]
	}
	return append(keep, like...), dropped
}

// KnownMetrics lists the base metric names ncu knows for GPU 0 (ncu --query-metrics), or nil when
// it cannot say.
func KnownMetrics(tool Tool) map[string]bool {
	out, err := exec.Command(tool.Path, "--query-metrics", "--devices", "0").Output()
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && strings.Contains(f[0], "__") {
			known[f[0]] = true
		}
	}
	if len(known) == 0 {
		return nil
	}
	return known
}

package nsight

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// CommandLineSection is the section ncu files the metrics asked with --metrics under.
const CommandLineSection = "Command line profiler metrics"

// Row is a line of the profile table: a metric of ncu's details page (by section and name) or a
// command-line metric, as the table labels it.
type Row struct {
	Label   string
	Section string // "" matches any section
	Name    string
}

// Rows are the profile table's lines, in order; a row no profile has is left out.
var Rows = []Row{
	{"duration", "GPU Speed Of Light Throughput", "Duration"},
	{"DRAM throughput, % of peak", "GPU Speed Of Light Throughput", "DRAM Throughput"},
	{"memory throughput, % of peak", "GPU Speed Of Light Throughput", "Memory Throughput"},
	{"compute (SM) throughput, % of peak", "GPU Speed Of Light Throughput", "Compute (SM) Throughput"},
	{"DRAM bandwidth", "Memory Workload Analysis", "Memory Throughput"},
	{"L1/TEX hit rate", "Memory Workload Analysis", "L1/TEX Hit Rate"},
	{"L2 hit rate", "Memory Workload Analysis", "L2 Hit Rate"},
	{"memory pipes busy", "Memory Workload Analysis", "Mem Pipes Busy"},
	{"theoretical occupancy", "Occupancy", "Theoretical Occupancy"},
	{"achieved occupancy", "Occupancy", "Achieved Occupancy"},
	{"registers per thread", "Launch Statistics", "Registers Per Thread"},
	{"warp cycles per issued instruction", "Warp State Statistics", "Warp Cycles Per Issued Instruction"},
	{"shared load bank conflicts", "", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"},
	{"shared store bank conflicts", "", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"},
	{"shared load wavefronts", "", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"},
	{"tensor pipe (mma) active, % of peak", "", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"},
	{"tensor pipe (wgmma) active, % of peak", "", "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"},
	{"tensor pipe (every tensor instruction) active, % of peak", "", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
	{"wgmma instructions, % of the tensor pipe's peak issue rate", "", "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"},
	{"wgmma instructions", "", "sm__inst_executed_pipe_tensor_op_gmma.sum"},
	{"FMA pipe active, % of peak", "", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"},
	{"distributed shared memory bytes", "", "l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum"},
	{"TMA (bulk copy) bytes", "", "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"},
	{"TMA unit active, % of peak", "", "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active"},
	{"L2 hit rate of loads", "", "lts__t_sector_op_read_hit_rate.pct"},
	{"DRAM bytes read", "", "dram__bytes_read.sum"},
	{"DRAM bytes written", "", "dram__bytes_write.sum"},
}

func (k Kernel) find(r Row) (Metric, bool) {
	for _, m := range k.Metrics {
		if m.Name == r.Name && (r.Section == "" || m.Section == r.Section) {
			return m, true
		}
	}
	return Metric{}, false
}

// Format writes a metric's value in the unit it has (base units: byte, byte/second, nsecond, %).
func Format(m Metric) string {
	if !m.OK {
		if m.Text != "" {
			return m.Text
		}
		return "n/a"
	}
	v := m.Value
	switch u := strings.ToLower(m.Unit); {
	case u == "%" || strings.HasSuffix(m.Name, ".pct") || strings.Contains(m.Name, "pct_of_peak"):
		return fmt.Sprintf("%.1f%%", v)
	case u == "byte/second" || u == "byte/s":
		return fmt.Sprintf("%.0f GB/s", v/1e9)
	case u == "byte":
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.2f GB", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.2f MB", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.1f kB", v/1e3)
		}
		return fmt.Sprintf("%.0f B", v)
	case u == "nsecond" || u == "ns":
		if v >= 1e6 {
			return fmt.Sprintf("%.2f ms", v/1e6)
		}
		return fmt.Sprintf("%.1f µs", v/1e3)
	case u == "usecond" || u == "us":
		return fmt.Sprintf("%.1f µs", v)
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// Table is a lesson's profiles side by side: one column per profiled step, one row per metric
// of Rows that some profile has, the launch, and the receipt in the caption.
func Table(f *File) show.Table {
	t := show.Table{Title: "Nsight Compute profile of " + f.Lesson, Header: []string{"metric"}}
	for _, p := range f.Profiles {
		t.Header = append(t.Header, p.Step+" ("+p.Kernel.Name+")")
	}
	launch := []string{"launch: grid x block"}
	for _, p := range f.Profiles {
		launch = append(launch, p.Kernel.Grid+" x "+p.Kernel.Block)
	}
	t.Rows = append(t.Rows, launch)
	for _, r := range Rows {
		row := []string{r.Label}
		any := false
		for _, p := range f.Profiles {
			m, ok := p.Kernel.find(r)
			if ok {
				any = true
				row = append(row, Format(m))
			} else {
				row = append(row, "—")
			}
		}
		if any {
			t.Rows = append(t.Rows, row)
		}
	}
	// Command-line metrics no row names (those picked by pattern on the GPU): a row each, by name.
	named := map[string]bool{}
	for _, r := range Rows {
		named[r.Name] = true
	}
	var extra []string
	for _, p := range f.Profiles {
		for _, m := range p.Kernel.Metrics {
			if m.Section == CommandLineSection && !named[m.Name] && !strings.HasPrefix(m.Name, stallPrefix) {
				named[m.Name] = true
				extra = append(extra, m.Name)
			}
		}
	}
	for _, name := range extra {
		row := []string{name}
		for _, p := range f.Profiles {
			if m, ok := p.Kernel.find(Row{Name: name}); ok {
				row = append(row, Format(m))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	var qs []string
	for _, p := range f.Profiles {
		if p.Question != "" {
			qs = append(qs, p.Step+": "+p.Question)
		}
		if p.Note != "" {
			qs = append(qs, p.Step+": "+p.Note)
		}
	}
	t.Caption = show.Sentences(strings.Join(qs, " "), "One launch of each kernel, profiled once by Nsight Compute (its replays give every counter one run of the same launch, with caches flushed and clocks locked to base, so the duration is longer than the suite's timing).",
		"Recorded on "+f.Receipt.String()+".")
	return t
}

// StallChart draws each profile's warp stall reasons (warps stalled per issued instruction, the
// reasons that matter most across the profiles, largest first): where the kernel's warps wait.
func StallChart(f *File) (*plot.Plot, error) {
	top := map[string]float64{}
	for _, p := range f.Profiles {
		for _, s := range p.Kernel.Stalls() {
			top[s.Reason] = max(top[s.Reason], s.PerIssue)
		}
	}
	if len(top) == 0 {
		return nil, fmt.Errorf("the profiles of %s have no warp stall reasons (the WarpStateStats metrics were not collected)", f.Lesson)
	}
	var labels []string
	for r := range top {
		labels = append(labels, r)
	}
	// Largest first, ties by name; at most 10 reasons.
	for i := range labels {
		for j := i + 1; j < len(labels); j++ {
			if top[labels[j]] > top[labels[i]] || top[labels[j]] == top[labels[i]] && labels[j] < labels[i] {
				labels[i], labels[j] = labels[j], labels[i]
			}
		}
	}
	if len(labels) > 10 {
		labels = labels[:10]
	}
	var series []charts.Series
	for _, p := range f.Profiles {
		vals := make([]float64, len(labels))
		for _, s := range p.Kernel.Stalls() {
			for i, l := range labels {
				if l == s.Reason {
					vals[i] = s.PerIssue
				}
			}
		}
		series = append(series, charts.Series{Name: p.Step, Values: vals})
	}
	date, _, _ := strings.Cut(f.Receipt.Date, "T")
	return charts.Bars(fmt.Sprintf("Warp stall reasons, %s (%s, %s)", f.Lesson, f.Receipt.GPU, date),
		"warps stalled per issued instruction", labels, series, false, 0)
}

// Show displays a lesson's profiles: the table, then the chart of stall reasons.
func Show(f *File) error {
	Table(f).Display()
	p, err := StallChart(f)
	if err != nil {
		show.Note(show.Info, err.Error())
		return nil
	}
	return show.Plot(p)
}

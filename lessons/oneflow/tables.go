package oneflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// ArticleMul is the article's elementwise table (A100 PCIe 40GB, 1555 GB/s peak, z = x*y at 32M):
// time in µs and bandwidth utilisation against that peak.
var ArticleMul = []struct {
	Step   string
	DType  DType
	TimeUS float64
	PctBW  float64
}{
	{"naive", F32, 298.46, 85.88},
	{"packed", F32, 284, 89.42},
	{"naive", F16, 237.28, 52.55},
	{"packed", F16, 140.74, 87.31},
}

// ArticleAtomics is the article's atomics table (A100, N = 32M halves), in ms.
var ArticleAtomics = map[string]float64{
	AtomicSteps[0].Name: 422.36,
	AtomicSteps[1].Name: 137.02,
	AtomicSteps[2].Name: 137.01,
}

// ArticleUpsample is the article's upsample table at (16,32,80,80) on the A100: ncu's DRAM
// bandwidth utilisation (not recomputable from bytes and time) and the time in µs.
var ArticleUpsample = []struct {
	Framework string
	DType     DType
	Dir       string
	PctBW     float64
	TimeUS    float64
}{
	{"PyTorch", F32, Forward, 28.30, 111.42},
	{"PyTorch", F32, Backward, 60.16, 65.12},
	{"OneFlow", F32, Forward, 52.18, 61.44},
	{"OneFlow", F32, Backward, 77.66, 50.56},
	{"PyTorch", F16, Forward, 16.99, 100.38},
	{"PyTorch", F16, Backward, 31.56, 57.38},
	{"OneFlow", F16, Forward, 43.26, 35.36},
	{"OneFlow", F16, Backward, 44.82, 40.26},
}

const articleSource = "Article: BBuf, CUDA notes 4 (2023), A100 PCIe 40GB, CUDA 11.8; its % is of the 1555 GB/s datasheet peak, ours of the measured copy bandwidth."

func find(run *record.Run, caseName, variant string, d DType, size int64) (record.Record, bool) {
	for _, r := range run.Records {
		if r.Case == caseName && r.Variant == variant && (d == "" || r.DType == string(d)) && (size == 0 || r.Size == size) {
			return r, true
		}
	}
	return record.Record{}, false
}

func usOf(r record.Record, ok bool) string {
	if !ok || r.MedianMS == 0 {
		return "unavailable"
	}
	return bench.FormatMS(r.MedianMS)
}

func pctOf(r record.Record, ok bool) string {
	if !ok || r.MedianMS == 0 {
		return "unavailable"
	}
	return show.Pct(r.PctBW)
}

// Tables are every table of the lesson, section by section.
func Tables(run *record.Run) []show.Table {
	var out []show.Table
	for _, sec := range Sections {
		out = append(out, SectionTables(run, sec)...)
	}
	return append(out, TargetsTable(run), show.Reports("Compile reports (block 256)", run.Kernels))
}

// SectionTables are the tables of one section.
func SectionTables(run *record.Run, section string) []show.Table {
	switch section {
	case SecElementwise:
		return elementwiseTables(run)
	case SecAtomics:
		return atomicsTables(run)
	case SecUpsample:
		return upsampleTables(run)
	}
	return nil
}

func unavailableNote(run *record.Run) string {
	for _, r := range run.Records {
		if r.Case == "unavailable" {
			return " PyTorch: " + r.Note
		}
	}
	return ""
}

func elementwiseTables(run *record.Run) []show.Table {
	t := show.Table{Title: "z = x*y at 32M elements: the article's A100 beside this GPU",
		Header: []string{"step", "dtype", "article time", "article % of peak", "time here", "% of copy BW here", "speedup over torch.mul here", "speedup over torch.compile here"}}
	over := func(r record.Record, ok bool, variant string, d DType) string {
		b, bok := find(run, "mul", variant, d, 0)
		if ok && bok && r.MedianMS > 0 && b.MedianMS > 0 {
			return show.Times(b.MedianMS / r.MedianMS)
		}
		return "unavailable"
	}
	for _, a := range ArticleMul {
		r, ok := find(run, "mul", a.Step, a.DType, 0)
		t.Rows = append(t.Rows, []string{a.Step, string(a.DType), fmt.Sprintf("%.1f µs", a.TimeUS), fmt.Sprintf("%.1f%%", a.PctBW), usOf(r, ok), pctOf(r, ok),
			over(r, ok, "PyTorch torch.mul", a.DType), over(r, ok, TorchCompile, a.DType)})
	}
	t.Caption = articleSource + unavailableNote(run) + " Measured: " + run.Receipt.String()
	out := []show.Table{t}
	for _, d := range DTypes {
		var recs []record.Record
		for _, r := range run.Select("mul") {
			if r.DType == string(d) || r.Variant == "device copy" {
				recs = append(recs, r)
			}
		}
		out = append(out, show.Records(fmt.Sprintf("z = x*y, %s, n = 32M: every step", d), recs, run.Receipt, "naive"))
	}
	return append(out, InflightTable(run), BytesTable(run))
}

// InflightTable is step 3's sweep at 32M halves: bytes of loads in flight per thread, cache hint
// and grid rule against time and % of the copy bandwidth, beside step 2 and torch.mul.
func InflightTable(run *record.Run) show.Table {
	t := show.Table{Title: "z = x*y at 32M: bytes in flight per thread, cache hint and grid (step 3's sweep)",
		Header: []string{"dtype", "packs/thread/trip", "loads in flight/thread", "cache hint", "grid rule", "kernel, grid", "median", "% of copy BW", "vs torch.mul", "check"}}
	for _, d := range []DType{F16, F32} {
		tm, tok := find(run, "mul", "PyTorch torch.mul", d, 0)
		for _, s := range InflightSweep() {
			r, ok := find(run, "mul inflight", s.Name, d, 0)
			if !ok {
				continue
			}
			hint := "none"
			if strings.Contains(s.Name, "streaming") {
				hint = "streaming (.cs)"
			}
			vs := "unavailable"
			if tok && tm.MedianMS > 0 && r.MedianMS > 0 {
				vs = show.Times(tm.MedianMS / r.MedianMS)
			}
			chk := fmt.Sprintf("pass (rel L2 %.1e)", r.RelL2)
			if !r.Correct {
				chk = "FAIL"
			}
			t.Rows = append(t.Rows, []string{string(d), fmt.Sprint(s.PacksPerThread), fmt.Sprintf("%d B", 2*16*s.PacksPerThread), hint, string(s.Grid), r.Note,
				bench.FormatMS(r.MedianMS), show.Pct(r.PctBW), vs, chk})
		}
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"(not in this run)", "", "", "", "", "", "", "", "", ""})
	}
	p, pok := find(run, "mul", "packed", F16, 0)
	tm, tok := find(run, "mul", "PyTorch torch.mul", F16, 0)
	t.Caption = fmt.Sprintf("Each point checked on a NaN-poisoned output, then timed like every step; the fastest is measured again as the ladder's step 3 (%q). In half, beside it: step 2 (packed) %s = %s of copy, torch.mul %s = %s. "+
		"Little's law: to run at bandwidth B with latency L a GPU needs B x L bytes in flight (about 3 TB/s x 600 ns = 1.8 MB on an H100, 14 KB per SM); "+
		"a resident block of 256 threads with one 16-byte pack of x and of y per thread holds 8 KB. Measured: %s",
		InflightName, usOf(p, pok), pctOf(p, pok), usOf(tm, tok), pctOf(tm, tok), run.Receipt.String())
	return t
}

// BytesTable is the size sweep by bytes moved: the packed step and torch.mul in both dtypes at the
// same number of bytes (n halves move what n/2 floats move). Equal bytes taking equal time in either
// dtype says what limits a step at a size is the transfer's size, not its dtype or instructions.
func BytesTable(run *record.Run) show.Table {
	cols := []struct {
		variant string
		d       DType
	}{{"packed", F16}, {"packed", F32}, {"PyTorch torch.mul", F16}, {"PyTorch torch.mul", F32}}
	t := show.Table{Title: "z = x*y by bytes moved: % of copy bandwidth (time) at equal bytes, both dtypes",
		Header: []string{"bytes moved", "packed float16", "packed float32", "torch.mul float16", "torch.mul float32"}}
	byBytes := map[int64]map[int]record.Record{}
	var sizes []int64
	for _, r := range run.Select("mul sweep") {
		for i, c := range cols {
			if r.Variant == c.variant && r.DType == string(c.d) && r.MedianMS > 0 {
				b := 3 * int64(c.d.Size()) * r.Size
				if byBytes[b] == nil {
					byBytes[b] = map[int]record.Record{}
					sizes = append(sizes, b)
				}
				byBytes[b][i] = r
			}
		}
	}
	slices.Sort(sizes)
	for _, b := range sizes {
		row := []string{fmt.Sprintf("%.1f MB", float64(b)/1e6)}
		for i := range cols {
			if r, ok := byBytes[b][i]; ok {
				row = append(row, fmt.Sprintf("%s (%s, n=%dM)", show.Pct(r.PctBW), bench.FormatMS(r.MedianMS), r.Size>>20))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"(no size sweep in this run)", "", "", "", ""})
	}
	t.Caption = "The article's 32M halves move 201 MB, as many bytes as 16M floats: at that size every kernel of either dtype, ours and torch.mul, reaches the same share of the copy bandwidth. Measured: " + run.Receipt.String()
	return t
}

func atomicsTables(run *record.Run) []show.Table {
	t := show.Table{Title: "Half dot product, every thread one atomic into one address (n = 32M, grid n/256 x 256)",
		Header: []string{"step", "article time (A100)", "time here", "speedup over atomicAdd(half) here", "result here", "check against its model"}}
	base, bok := find(run, "atomics", AtomicSteps[0].Name, "", 0)
	for _, s := range AtomicSteps {
		r, ok := find(run, "atomics", s.Name, "", 0)
		art := "not in the article"
		if v, has := ArticleAtomics[s.Name]; has {
			art = fmt.Sprintf("%.2f ms", v)
		}
		sp, res, chk := "unavailable", "", ""
		if ok && bok && r.MedianMS > 0 {
			sp = show.Times(base.MedianMS / r.MedianMS)
		}
		if ok {
			res = r.Note
			chk = "exact"
			if !r.Correct {
				chk = "FAIL"
			}
		}
		t.Rows = append(t.Rows, []string{s.Name, art, usOf(r, ok), sp, res, chk})
	}
	t.Caption = fmt.Sprintf("Inputs pinned: every x and y is %.10g (the half nearest %.1f); the time of same-address atomics depends on the values. "+
		"Each step's answer must equal, bit for bit, a model of its own accumulation (equal terms make the order irrelevant). "+
		"Method of these rows (each run takes up to 0.2 s): %s, in place of the run's default. %s Device and versions: %s", RoundHalf(DotValue), DotValue, DotMethod, articleSource, run.Receipt.String())
	d := show.Table{Title: "How far each accumulation drifts from the float64 answer",
		Header: []string{"step", "accumulator", "answer", "float64 answer", "relative error"}}
	for _, r := range run.Select("drift") {
		parts := strings.SplitN(r.Note, "|", 2)
		if len(parts) != 2 {
			continue
		}
		d.Rows = append(d.Rows, []string{r.Variant, r.DType, parts[0], parts[1], fmt.Sprintf("%.3g", r.RelL2)})
	}
	d.Caption = "A half has 11 significant bits: once the running sum reaches 32, its spacing (1/32) is more than twice a product (about 0.01), every further addition rounds back to the same value, and the sum stops. " +
		"A half sum of 32M terms is meaningless; accumulate in float (the last step) and round once at the end."
	return []show.Table{t, d}
}

func upsampleTables(run *record.Run) []show.Table {
	t := show.Table{Title: "Nearest 2x upsample at (16,32,80,80): the article's A100 beside this GPU",
		Header: []string{"kernel", "dtype", "direction", "article % BW (ncu)", "article time", "time here", "% of copy BW here"}}
	in := int64(ArticleShape[0] * ArticleShape[1] * ArticleShape[2] * ArticleShape[3])
	for _, a := range ArticleUpsample {
		variant := "pack2x"
		if a.Framework == "PyTorch" {
			variant = "PyTorch"
		}
		r, ok := find(run, "upsample "+a.Dir, variant, a.DType, in)
		name := a.Framework
		if variant == "pack2x" {
			name = "OneFlow / pack2x here"
		}
		t.Rows = append(t.Rows, []string{name, string(a.DType), a.Dir, fmt.Sprintf("%.2f%%", a.PctBW), fmt.Sprintf("%.2f µs", a.TimeUS), usOf(r, ok), pctOf(r, ok)})
	}
	t.Caption = articleSource + " The article's percentages are ncu's DRAM utilisation; ours are bytes that must move (input once, output once) over time, with the L2 flushed before every run. At this size (13 MB in) launch overhead matters." + unavailableNote(run)
	all := show.Table{Title: "Upsample: every kernel, shape, dtype and direction",
		Header: []string{"shape", "dtype", "direction", "kernel", "median", "min .. max", "GB/s", "% copy BW", "vs generic", "vs PyTorch", "vs torch.compile", "check"}}
	for _, shape := range [][4]int{ArticleShape, LargeShape} {
		size := int64(shape[0] * shape[1] * shape[2] * shape[3])
		for _, d := range DTypes {
			for _, dir := range []string{Forward, Backward} {
				g, gok := find(run, "upsample "+dir, "generic", d, size)
				p, pok := find(run, "upsample "+dir, "PyTorch", d, size)
				tc, tcok := find(run, "upsample "+dir, TorchCompile, d, size)
				for _, v := range []string{"generic", "pack2x", "PyTorch", TorchCompile} {
					r, ok := find(run, "upsample "+dir, v, d, size)
					if !ok {
						continue
					}
					if r.MedianMS <= 0 {
						all.Rows = append(all.Rows, []string{fmtShape(shape), string(d), dir, v, "unavailable", "", "", "", "", "", "", r.Note})
						continue
					}
					vsG, vsP, vsC := "", "", ""
					if tcok && tc.MedianMS > 0 {
						vsC = show.Times(tc.MedianMS / r.MedianMS)
					}
					if gok && r.MedianMS > 0 {
						vsG = show.Times(g.MedianMS / r.MedianMS)
					}
					if pok && p.MedianMS > 0 {
						vsP = show.Times(p.MedianMS / r.MedianMS)
					}
					chk := "baseline"
					if r.Kind == "kernel" {
						chk = fmt.Sprintf("pass (%s, rel L2 %.1e)", r.Tol, r.RelL2)
						if !r.Correct {
							chk = "FAIL"
						}
					}
					all.Rows = append(all.Rows, []string{fmtShape(shape), string(d), dir, v, bench.FormatMS(r.MedianMS),
						bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS), show.Num(r.GBps), show.Pct(r.PctBW), vsG, vsP, vsC, chk})
				}
			}
		}
	}
	all.Caption = "Bytes counted: the input once and the output (4x) once. Backward dy is random: the kernel's time does not depend on its values. Measured: " + run.Receipt.String()
	return []show.Table{t, all}
}

// Target is one of the lesson's goals with the figure that meets it or not.
type Target struct {
	Goal   string
	Figure string
	Met    bool
	Known  bool // false when the run lacks a number the goal needs
}

// Targets checks the lesson's goals on a run: packed elementwise at 95% of copy bandwidth and not
// slower than torch.mul; half2 atomics 3x faster than half atomics; pack2x upsample at 85% at the
// large shape in float and faster than PyTorch at the article's shape.
func Targets(run *record.Run) []Target {
	var out []Target
	for _, d := range DTypes {
		r, ok := bestPacked(run, d)
		fig := pctOf(r, ok)
		if ok {
			fig += " (" + r.Variant + ")"
		}
		out = append(out, Target{Goal: fmt.Sprintf("packed z = x*y %s >= 95%% of copy bandwidth", d), Figure: fig, Met: ok && r.PctBW >= 95, Known: ok})
		t, tok := find(run, "mul", "PyTorch torch.mul", d, 0)
		tg := Target{Goal: fmt.Sprintf("packed z = x*y %s no slower than torch.mul", d), Known: ok && tok && t.MedianMS > 0}
		if tg.Known {
			tg.Figure = fmt.Sprintf("%s: %s vs %s", r.Variant, bench.FormatMS(r.MedianMS), bench.FormatMS(t.MedianMS))
			tg.Met = r.MedianMS <= t.MedianMS
		}
		out = append(out, tg)
		out = append(out, besideCompiled(run, "mul", r.Variant, d, 0, fmt.Sprintf("(beside the targets) packed z = x*y %s no slower than torch.compile", d)))
	}
	h, hok := find(run, "atomics", AtomicSteps[0].Name, "", 0)
	h2, h2ok := find(run, "atomics", AtomicSteps[1].Name, "", 0)
	tg := Target{Goal: "atomicAdd(half2) >= 3x faster than atomicAdd(half)", Known: hok && h2ok && h2.MedianMS > 0}
	if tg.Known {
		sp := h.MedianMS / h2.MedianMS
		tg.Figure, tg.Met = show.Times(sp), sp >= 3
	}
	out = append(out, tg)
	large := int64(LargeShape[0] * LargeShape[1] * LargeShape[2] * LargeShape[3])
	small := int64(ArticleShape[0] * ArticleShape[1] * ArticleShape[2] * ArticleShape[3])
	for _, dir := range []string{Forward, Backward} {
		r, ok := find(run, "upsample "+dir, "pack2x", F32, large)
		out = append(out, Target{Goal: fmt.Sprintf("pack2x upsample %s float32 at %s >= 85%% of copy bandwidth", dir, fmtShape(LargeShape)), Figure: pctOf(r, ok), Met: ok && r.PctBW >= 85, Known: ok})
	}
	for _, d := range DTypes {
		for _, dir := range []string{Forward, Backward} {
			r, ok := find(run, "upsample "+dir, "pack2x", d, small)
			t, tok := find(run, "upsample "+dir, "PyTorch", d, small)
			tg := Target{Goal: fmt.Sprintf("pack2x upsample %s %s at %s faster than PyTorch", dir, d, fmtShape(ArticleShape)), Known: ok && tok && t.MedianMS > 0}
			if tg.Known {
				tg.Figure = fmt.Sprintf("%s vs %s (%s)", bench.FormatMS(r.MedianMS), bench.FormatMS(t.MedianMS), show.Times(t.MedianMS/r.MedianMS))
				tg.Met = r.MedianMS < t.MedianMS
			}
			out = append(out, tg)
			out = append(out, besideCompiled(run, "upsample "+dir, "pack2x", d, small, fmt.Sprintf("(beside the targets) pack2x upsample %s %s at %s no slower than torch.compile", dir, d, fmtShape(ArticleShape))))
		}
	}
	return out
}

// bestPacked is the fastest correct record of the packed steps (MulSteps after the naive one) at
// the article's size in dtype d.
func bestPacked(run *record.Run, d DType) (record.Record, bool) {
	var best record.Record
	found := false
	for _, name := range []string{MulSteps[1].Name, InflightName} {
		r, ok := find(run, "mul", name, d, 0)
		if ok && r.Correct && r.MedianMS > 0 && (!found || r.MedianMS < best.MedianMS) {
			best, found = r, true
		}
	}
	return best, found
}

// besideCompiled compares a kernel with torch.compile of the same case; when torch.compile was
// unavailable the figure is its reason.
func besideCompiled(run *record.Run, caseName, variant string, d DType, size int64, goal string) Target {
	r, ok := find(run, caseName, variant, d, size)
	c, cok := find(run, caseName, TorchCompile, d, size)
	tg := Target{Goal: goal, Known: ok && cok && c.MedianMS > 0 && r.MedianMS > 0}
	switch {
	case tg.Known:
		tg.Figure = fmt.Sprintf("%s vs %s (%s)", bench.FormatMS(r.MedianMS), bench.FormatMS(c.MedianMS), show.Times(c.MedianMS/r.MedianMS))
		tg.Met = r.MedianMS <= c.MedianMS
	case cok:
		tg.Figure = c.Note
	}
	return tg
}

// TargetsTable shows Targets.
func TargetsTable(run *record.Run) show.Table {
	t := show.Table{Title: "The lesson's targets, met or not, on this run", Header: []string{"goal", "figure", "verdict"}}
	for _, g := range Targets(run) {
		v := "not met"
		switch {
		case !g.Known:
			v = "not measured"
			if g.Figure == "" {
				g.Figure = "unavailable"
			}
		case g.Met:
			v = "met"
		}
		t.Rows = append(t.Rows, []string{g.Goal, g.Figure, v})
	}
	t.Caption = "Measured: " + run.Receipt.String()
	return t
}

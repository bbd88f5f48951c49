// Package compare sets GPUs side by side: the runs of the reproduce command on any number of
// machines (receipts dropped into one folder, a class comparing its machines), the recorded runs
// (results/, and the second machine in results/h100/) and the articles' own tables. Times differ
// by GPU; what is comparable is the share of the GPU a kernel uses, so each measurement is shown as the fraction of the machine's measured
// copy bandwidth (memory-bound kernels) or of the peak of its arithmetic on that machine
// (compute-bound ones: the FP32 peak on the CUDA cores, the datasheet tensor-core peak of its format
// on tensor cores), whichever the kernel uses more, and as its speedup over PyTorch eager measured
// on the same machine.
//
//	machines, err := compare.Load("class")          // every <lesson>.json under class/, by folder and GPU
//	machines = append(compare.RecordedMachines(), machines...)
//	for _, t := range compare.Tables(machines) { t.Display() }
package compare

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/lessons"
	"github.com/cudalessons/cudalessons/results"
)

// Machine is one GPU's runs: a folder of receipts (or the recorded results), by lesson ID.
type Machine struct {
	Label  string // "NVIDIA H100 80GB HBM3 (alice)"
	Folder string // where its receipts lie: "results/", "class/alice"
	Runs   map[string]*record.Run
}

// Device is the GPU's name, from any of its runs.
func (m Machine) Device() string {
	for _, r := range m.Runs {
		return r.Receipt.Device.Name
	}
	return ""
}

// Recorded is the recorded run of every lesson (results/).
func Recorded() Machine { return recordedIn(results.FS, "results/") }

// RecordedMachines are the recorded runs of every machine the project keeps: results/ first, then
// the second machine (results/h100/), when it has runs.
func RecordedMachines() []Machine {
	machines := []Machine{Recorded()}
	if sub, err := fs.Sub(results.H100, "h100"); err == nil {
		if m := recordedIn(sub, "results/h100/"); len(m.Runs) > 0 {
			machines = append(machines, m)
		}
	}
	return machines
}

// recordedIn reads each lesson's <ID>.json from fsys, labelled as recorded in folder.
func recordedIn(fsys fs.FS, folder string) Machine {
	m := Machine{Folder: folder, Runs: map[string]*record.Run{}}
	for _, l := range lessons.All() {
		if r, err := record.LoadFS(fsys, l.ID); err == nil {
			m.Runs[l.ID] = r
		}
	}
	m.Label = "recorded " + m.Device() + " (" + folder + ")"
	return m
}

// Load reads every receipt under dir: each <lesson>.json that decodes as a run of a known lesson
// with a device. Receipts are grouped by the folder they lie in and the GPU they name, so a class
// can drop each machine's output folder into dir (dir/alice, dir/bob, ...). Other files are
// skipped; a folder with no receipt at all is an error that says what was looked for.
func Load(dir string) ([]Machine, error) {
	known := map[string]bool{}
	var ids []string
	for _, l := range lessons.All() {
		known[l.ID] = true
		ids = append(ids, l.ID+".json")
	}
	byKey := map[string]*Machine{}
	var keys []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !known[strings.TrimSuffix(d.Name(), ".json")] {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r record.Run
		if json.Unmarshal(data, &r) != nil || r.Receipt.Device.Name == "" || !known[r.Lesson] {
			return nil // not a receipt of this suite
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		key := rel + "\x00" + r.Receipt.Device.Name
		m, ok := byKey[key]
		if !ok {
			label := r.Receipt.Device.Name
			if rel != "." {
				label += " (" + filepath.ToSlash(rel) + ")"
			} else if r.Receipt.Host != "" {
				label += " (" + r.Receipt.Host + ")"
			}
			m = &Machine{Label: label, Folder: filepath.ToSlash(filepath.Join(dir, rel)), Runs: map[string]*record.Run{}}
			byKey[key] = m
			keys = append(keys, key)
		}
		m.Runs[r.Lesson] = &r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading receipts under %s: %w", dir, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no receipts under %s: looked for %s written by the reproduce command (make reproduce, then copy its output folder there)", dir, strings.Join(ids, ", "))
	}
	sort.Strings(keys)
	out := make([]Machine, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, nil
}

// key identifies one measurement across machines.
type key struct {
	Case, Variant, DType string
	Size                 int64
}

func keyOf(r record.Record) key { return key{r.Case, r.Variant, r.DType, r.Size} }

// column is a machine or an article's GPU: its records of one lesson by key, and the machine's
// receipt (none for an article).
type column struct {
	label   string
	article bool
	receipt record.Receipt
	recs    map[key]record.Record
}

// Share is the fraction of a machine a measurement uses and which resource: the larger of its
// share of the machine's copy bandwidth and of the peak of its dtype there (receipt.FLOPShare: the
// FP32 peak for the CUDA cores, the datasheet tensor-core peak of its format for tensor-core steps,
// recomputed from its GFLOP/s, so receipts written before tensor peaks show right). Below 1% of both
// it is not a useful figure. A tensor-core step on a GPU whose tensor peak is not known has no
// share: resource then says why.
func Share(r record.Record, receipt record.Receipt) (pct float64, resource string, ok bool) {
	return show.StepShare(receipt, r)
}

// share is Share on a machine's column; an article's own percentage (of a datasheet peak, or ncu's
// DRAM counter) is taken as it is.
func (c column) share(r record.Record) (pct float64, resource string, ok bool) {
	if !c.article {
		return Share(r, c.receipt)
	}
	pct = max(r.PctBW, r.PctFLOPs)
	return pct, "(the article's own %)", pct >= 1
}

// speedup is the record's speedup over PyTorch eager on the same machine, when it was measured.
func speedup(col column, r record.Record) (float64, bool) {
	for _, name := range []string{"PyTorch", "PyTorch torch.mul"} {
		for _, dt := range []string{r.DType, "float32"} { // a tf32 step is compared with the float32 baseline
			b, ok := col.recs[key{r.Case, name, dt, r.Size}]
			if ok && b.MedianMS > 0 && r.MedianMS > 0 {
				return b.MedianMS / r.MedianMS, true
			}
		}
	}
	return 0, false
}

// lessonColumns are the columns of one lesson: the machines that ran it, then the article's GPUs;
// and its rows, in the order the first machine (or the article) measured them.
func lessonColumns(l lab.Lesson, machines []Machine) ([]column, []key) {
	want := map[string]bool{}
	for _, c := range l.Compare {
		want[c] = true
	}
	var cols []column
	var rows []key
	seen := map[key]bool{}
	add := func(c *column, r record.Record) {
		if !want[r.Case] || r.MedianMS <= 0 || r.Kind == "reference" || r.Variant == "device copy" {
			return
		}
		k := keyOf(r)
		c.recs[k] = r
		if !seen[k] {
			seen[k] = true
			rows = append(rows, k)
		}
	}
	for _, m := range machines {
		run, ok := m.Runs[l.ID]
		if !ok {
			continue
		}
		c := column{label: m.Label, receipt: run.Receipt, recs: map[key]record.Record{}}
		for _, r := range run.Records {
			add(&c, r)
		}
		cols = append(cols, c)
	}
	if l.Article != nil {
		byDevice := map[string]int{}
		for _, r := range l.Article() {
			i, ok := byDevice[r.Device]
			if !ok {
				i = len(cols)
				byDevice[r.Device] = i
				cols = append(cols, column{label: r.Device, article: true, recs: map[key]record.Record{}})
			}
			add(&cols[i], r)
		}
	}
	return cols, rows
}

// Tables are, for each lesson some machine ran, the share of the GPU of every step on every
// machine and article GPU (with its time), and the speedups over PyTorch eager on each.
func Tables(machines []Machine) []show.Table {
	var out []show.Table
	for _, l := range lessons.All() {
		cols, rows := lessonColumns(l, machines)
		if len(rows) == 0 || len(cols) == 0 || cols[0].article {
			continue
		}
		t := show.Table{Title: l.ID + ": share of each GPU (and time) per step", Header: []string{"case", "step", "dtype", "size"}}
		sp := show.Table{Title: l.ID + ": speedup over PyTorch eager on the same GPU", Header: []string{"case", "step", "dtype", "size"}}
		for _, c := range cols {
			t.Header = append(t.Header, c.label)
			sp.Header = append(sp.Header, c.label)
		}
		for _, k := range rows {
			row := []string{k.Case, k.Variant, k.DType, fmt.Sprint(k.Size)}
			srow := append([]string(nil), row...)
			anySpeed := false
			for _, c := range cols {
				r, ok := c.recs[k]
				if !ok {
					row = append(row, "—")
					srow = append(srow, "—")
					continue
				}
				cell := bench.FormatMS(r.MedianMS)
				if pct, res, ok := c.share(r); ok {
					cell = show.Pct(pct) + " " + res + ", " + cell
				} else if strings.HasPrefix(res, "n/a") {
					cell = res + ", " + cell
				}
				row = append(row, cell)
				if s, ok := speedup(c, r); ok {
					srow = append(srow, show.Times(s))
					anySpeed = true
				} else {
					srow = append(srow, "—")
				}
			}
			t.Rows = append(t.Rows, row)
			if anySpeed {
				sp.Rows = append(sp.Rows, srow)
			}
		}
		t.Caption = "Each machine's share is of its own measured copy bandwidth (memory-bound steps) or of the peak of the step's arithmetic there (compute-bound ones): " +
			"the FP32 peak for steps on the CUDA cores, the datasheet tensor-core peak of the step's format (TF32, FP16, BF16; dense, float32 accumulation) for tensor-core steps, " +
			"where a split (3xTF32, fp16x3, bf16x3) does three products per useful one, so its ceiling is a third of that peak (33%); whichever the step uses more, below 1% of both only the time. " +
			"Article columns: the article's own times; their % is the article's (of a datasheet peak, or ncu's DRAM counter), not recomputable. " + receipts(l, machines)
		out = append(out, t)
		if len(sp.Rows) > 0 {
			sp.Caption = "Ratios of medians measured in one run on each machine; the article's are ratios of its single profiled iterations."
			out = append(out, sp)
		}
	}
	return out
}

func receipts(l lab.Lesson, machines []Machine) string {
	var parts []string
	for _, m := range machines {
		if r, ok := m.Runs[l.ID]; ok {
			parts = append(parts, m.Label+": "+r.Receipt.String())
		}
	}
	return "Receipts: " + strings.Join(parts, " | ")
}

// Figures are, for each lesson and case some machine ran, a bar chart of the share of each GPU
// per step (machines, and the articles where they give a %), and one of the speedups over PyTorch
// eager.
func Figures(machines []Machine) ([]lab.Figure, error) {
	var out []lab.Figure
	for _, l := range lessons.All() {
		cols, rows := lessonColumns(l, machines)
		if len(rows) == 0 || len(cols) == 0 || cols[0].article {
			continue
		}
		for _, caseName := range l.Compare {
			var ks []key
			sizes := map[int64]bool{}
			for _, k := range rows {
				if k.Case == caseName {
					ks = append(ks, k)
					sizes[k.Size] = true
				}
			}
			if len(ks) == 0 {
				continue
			}
			label := func(k key) string {
				name := k.Variant
				switch {
				case strings.HasPrefix(k.DType, "float16"):
					name += " f16"
				case k.DType != "float32":
					name += " " + k.DType
				}
				if len(sizes) > 1 {
					name += fmt.Sprintf(" n=%d", k.Size)
				}
				return name
			}
			var labels, slabels []string
			share := make([]charts.Series, len(cols))
			speed := make([]charts.Series, len(cols))
			for i, c := range cols {
				share[i].Name, speed[i].Name = c.label, c.label
			}
			for _, k := range ks {
				labels = append(labels, label(k))
				hasSpeed := false
				for _, c := range cols {
					if r, ok := c.recs[k]; ok {
						if _, ok := speedup(c, r); ok && !strings.HasPrefix(k.Variant, "PyTorch") {
							hasSpeed = true
						}
					}
				}
				if hasSpeed {
					slabels = append(slabels, label(k))
				}
				for i, c := range cols {
					r, ok := c.recs[k]
					pct, _, useful := c.share(r)
					if !ok || !useful {
						pct = 0
					}
					share[i].Values = append(share[i].Values, pct)
					if hasSpeed {
						sp, _ := speedup(c, r)
						speed[i].Values = append(speed[i].Values, sp)
					}
				}
			}
			name := l.ID + "_" + strings.ReplaceAll(caseName, " ", "_")
			if ss := nonEmpty(share); len(ss) > 0 {
				p, err := charts.Bars(l.ID+" "+caseName+": share of each GPU", "% of copy BW, FP32 peak or tensor peak (datasheet)", labels, ss, false, 100)
				if err != nil {
					return nil, err
				}
				out = append(out, lab.Figure{Name: "compare_" + name + "_share", Plot: p})
			}
			if ss := nonEmpty(speed); len(slabels) > 0 && len(ss) > 0 {
				p, err := charts.Bars(l.ID+" "+caseName+": speedup over PyTorch eager on the same GPU", "speedup (x)", slabels, ss, true, 1)
				if err != nil {
					return nil, err
				}
				out = append(out, lab.Figure{Name: "compare_" + name + "_speedup", Plot: p})
			}
		}
	}
	return out, nil
}

// nonEmpty drops the series with no positive value (an article with no % at all).
func nonEmpty(ss []charts.Series) []charts.Series {
	var out []charts.Series
	for _, s := range ss {
		for _, v := range s.Values {
			if v > 0 {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Show displays the comparison in a notebook: the recorded runs (RecordedMachines), the receipts found under
// root/rel (a reader's `make reproduce` output, or a class's folder of them) and the articles, as
// tables and charts. Messages name rel, never the machine's path. Without receipts there it says
// how to make them and shows the recorded run beside the articles.
func Show(root, rel string) error {
	machines := RecordedMachines()
	found, err := Load(filepath.Join(root, rel))
	if err != nil {
		show.Note(show.Info, fmt.Sprintf("No receipts in %s/ yet: `make reproduce` (or `go run ./cmd/reproduce -out %s`) writes them there; a class drops each machine's output folder into one folder and points this cell at it. Shown below: the recorded runs beside the articles.", rel, rel))
	} else {
		machines = append(machines, found...)
		var names []string
		for _, m := range found {
			names = append(names, m.Label)
		}
		show.Note(show.Success, fmt.Sprintf("%d machine(s) found: %s.", len(found), strings.Join(names, "; ")))
	}
	for _, t := range Tables(machines) {
		t.Display()
	}
	figs, err := Figures(machines)
	if err != nil {
		return err
	}
	for _, f := range figs {
		if err := show.Plot(f.Plot); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the comparison into out: compare.md (every table in Markdown, each figure linked)
// and the figures as SVG and PNG.
func Write(machines []Machine, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# GPUs side by side\n\n")
	for _, t := range Tables(machines) {
		b.WriteString(t.Markdown() + "\n")
	}
	figs, err := Figures(machines)
	if err != nil {
		return err
	}
	for _, f := range figs {
		for _, ext := range []string{".svg", ".png"} {
			if err := charts.Save(f.Plot, filepath.Join(out, f.Name+ext)); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "![%s](%s.svg)\n\n", f.Plot.Title.Text, f.Name)
	}
	return os.WriteFile(filepath.Join(out, "compare.md"), []byte(b.String()), 0o644)
}

package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons"
	"github.com/cudalessons/cudalessons/results"
)

// A class folder: the recorded receipts copied for two machines, one renamed to another GPU, with
// a stray JSON file beside them. Both machines are found, each column appears in every lesson's
// table beside the recorded run and the article's GPUs, and the charts render.
func TestCompareTwoMachines(t *testing.T) {
	dir := t.TempDir()
	entries, err := results.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice", "bob"} {
		if err := os.MkdirAll(filepath.Join(dir, who), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := results.FS.ReadFile(e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if who == "bob" {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				receipt, _ := m["receipt"].(map[string]any)
				if device, ok := receipt["device"].(map[string]any); ok { // a lesson's run (not gpus.json or sanitize.json)
					device["name"] = "NVIDIA L4"
					if data, err = json.Marshal(m); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.WriteFile(filepath.Join(dir, who, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "alice", "notes.json"), []byte(`{"x": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || !strings.Contains(found[0].Label, "alice") || found[1].Device() != "NVIDIA L4" {
		t.Fatalf("machines: %+v", found)
	}
	machines := append(RecordedMachines(), found...)
	tabs := Tables(machines)
	if len(tabs) < 3 {
		t.Fatalf("%d tables", len(tabs))
	}
	all := ""
	for _, tb := range tabs {
		all += tb.Text()
	}
	for _, want := range []string{"NVIDIA L4 (bob)", "(alice)", "recorded NVIDIA H200", "recorded NVIDIA H100", "A100 PCIe 40GB (article)", "GTX 1070M (article)", "% copy BW", "% FP32 peak", "v4 balanced", "pack2x"} {
		if !strings.Contains(all, want) {
			t.Errorf("the tables do not mention %q", want)
		}
	}
	figs, err := Figures(machines)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) < 4 {
		t.Errorf("%d figures", len(figs))
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "01_rwkv.json") {
		t.Errorf("an empty folder: %v", err)
	}
}

// The recorded tensor-core steps are shares of the H100's tensor peaks of their format (RWKV's v8
// was 229% "of the FP32 peak", cuBLAS TF32 550%): no share of a peak in the tables is over 100%,
// a tf32 record's is of the TF32 tensor peak, and a float32 one's stays of the FP32 peak.
func TestTensorStepsAgainstTheirTensorPeak(t *testing.T) {
	rec := Recorded()
	mm, ok := rec.Runs["03_matmul"]
	if !ok {
		t.Skip("no recorded matmul run")
	}
	for _, c := range []struct {
		variant, want string
	}{{"cuBLAS TF32 (torch.matmul, TF32 on)", "TF32 tensor peak (datasheet)"}, {"8 tensor core tf32", "TF32 tensor peak (datasheet)"},
		{"cuBLAS fp16 (torch.matmul on half inputs)", "FP16 tensor peak (datasheet)"}, {"7 warp tile", "FP32 peak"}} {
		r, ok := mm.Find("matmul", c.variant, 0)
		if !ok {
			t.Errorf("%s is not recorded", c.variant)
			continue
		}
		pct, res, ok := Share(r, mm.Receipt)
		if !ok || res != c.want || pct > 100 {
			t.Errorf("%s: %.1f%% of %q; want a share under 100%% of %q", c.variant, pct, res, c.want)
		}
	}
	if r, ok := mm.Find("matmul", "9 fp16x3 split", 0); ok {
		if _, res, _ := Share(r, mm.Receipt); !strings.Contains(res, "FP16 tensor peak (datasheet") || !strings.Contains(res, "33%") {
			t.Errorf("a split's share does not say its ceiling: %q", res)
		}
	}
	pctCell := regexp.MustCompile(`([0-9.]+)% ([^,]*peak[^,]*)`)
	for _, tb := range Tables([]Machine{rec}) {
		for _, row := range tb.Rows {
			for _, cell := range row {
				for _, m := range pctCell.FindAllStringSubmatch(cell, -1) {
					if v, err := strconv.ParseFloat(m[1], 64); err == nil && v > 100 {
						t.Errorf("%s: %s %s: %s", tb.Title, row[0], row[1], cell)
					}
				}
			}
		}
	}
}

// A quick run lines up with the recorded one row for row: the recorded run of every lesson beside
// a copy of it restricted to what a quick run measures (its lesson's Plan(quick)) leaves no row
// with a time on one side and a dash on the other. Notebook 00's quick vector add at 16M floats
// (the recorded run has 64M) put each on a row of its own.
func TestQuickRunLinesUpWithTheRecordedOne(t *testing.T) {
	rec := Recorded()
	quick := Machine{Label: "quick run", Runs: map[string]*record.Run{}}
	for _, l := range lessons.All() {
		if r, ok := rec.Runs[l.ID]; ok {
			quick.Runs[l.ID] = lab.Restrict(r, l.Plan(true, r.Receipt.Device))
		}
	}
	machines := []Machine{rec, quick}
	for _, l := range lessons.All() {
		cols, rows := lessonColumns(l, machines)
		if len(rows) == 0 || len(cols) < 2 || cols[0].article || cols[1].article {
			t.Errorf("%s: no rows, or not both machines: %d rows, %d columns", l.ID, len(rows), len(cols))
			continue
		}
		n := 0
		for _, k := range rows {
			_, a := cols[0].recs[k]
			_, b := cols[1].recs[k]
			if a != b {
				t.Errorf("%s: %s | %s | %s | %d: recorded %v, quick %v", l.ID, k.Case, k.Variant, k.DType, k.Size, a, b)
			}
			if a {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no row measured on both", l.ID)
		}
	}
	for _, tb := range Tables(machines) {
		for _, row := range tb.Rows {
			if (row[4] == "—") != (row[5] == "—") {
				t.Errorf("%s: a dash on one side: %q", tb.Title, row)
			}
		}
	}
}

func TestRecordedMachinesAreTwoGPUs(t *testing.T) {
	ms := RecordedMachines()
	if len(ms) != 2 {
		t.Fatalf("RecordedMachines gave %d machines, want results/ and results/h100/", len(ms))
	}
	if ms[0].Device() == "" || ms[1].Device() == "" || ms[0].Device() == ms[1].Device() {
		t.Errorf("the recorded machines are %q and %q: want two GPUs", ms[0].Device(), ms[1].Device())
	}
	for _, m := range ms {
		if len(m.Runs) != len(lessons.All()) {
			t.Errorf("%s has %d runs, want every lesson's %d", m.Label, len(m.Runs), len(lessons.All()))
		}
	}
	cols, _ := lessonColumns(lessons.All()[0], ms)
	if len(cols) < 2 {
		t.Errorf("lesson %s shows %d columns, want both machines", lessons.All()[0].ID, len(cols))
	}
}

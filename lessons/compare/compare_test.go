package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
				m["receipt"].(map[string]any)["device"].(map[string]any)["name"] = "NVIDIA L4"
				if data, err = json.Marshal(m); err != nil {
					t.Fatal(err)
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
	machines := append([]Machine{Recorded()}, found...)
	tabs := Tables(machines)
	if len(tabs) < 3 {
		t.Fatalf("%d tables", len(tabs))
	}
	all := ""
	for _, tb := range tabs {
		all += tb.Text()
	}
	for _, want := range []string{"NVIDIA L4 (bob)", "(alice)", "recorded NVIDIA H100", "A100 PCIe 40GB (article)", "GTX 1070M (article)", "% copy BW", "% FP32 peak", "v4 balanced", "pack2x"} {
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

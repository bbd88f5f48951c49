package oneflow

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/results"
)

// Every profile runs every step (no source declares a need, no plan reads the GPU's limits), and
// Steps checks every step the run records, by its record's name.
func TestStepsOnProfiles(t *testing.T) {
	for _, key := range labtest.Profiles {
		p, err := gpu.LookupProfile(key)
		if err != nil {
			t.Fatal(err)
		}
		if ref := Lesson.RefusedOn(p.Device()); len(ref) != 0 {
			t.Errorf("%s refuses %v", key, ref)
		}
	}
	p, _ := gpu.LookupProfile("t4")
	names := map[string]bool{}
	for _, c := range Lesson.StepsOn(p.Device()) {
		names[c.Step] = true
	}
	rec, err := record.LoadFS(results.FS, ID)
	if err != nil {
		t.Skip("no recorded run:", err)
	}
	for _, r := range rec.Records {
		if r.Kind == "kernel" && !names[r.Variant] && !strings.Contains(r.Variant, "misaligned") {
			t.Errorf("the run records %q (%s), which Steps does not check", r.Variant, r.Case)
		}
	}
	// A step refused on some GPU is left out of every table and figure.
	ref := map[string]lab.StepCheck{"packed": {Step: "packed", File: "2_packed.cu", Refused: "test refusal", Instead: "naive"},
		"pack2x": {Step: "pack2x", File: "u_2_pack2x.cu", Refused: "test refusal", Instead: "generic"}}
	run := lab.WithoutRefused(rec, ref)
	for _, tb := range Tables(run) {
		for _, row := range tb.Rows {
			if line := strings.Join(row, " | "); strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
				t.Errorf("%s: %s", tb.Title, line)
			}
		}
	}
	if _, err := Figures(run); err != nil {
		t.Errorf("figures with refused steps: %v", err)
	}
}

package vecadd

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
	"github.com/cudalessons/cudalessons/results"
)

// Every profile runs the three steps, each source builds for sm_75, and the tables and figures
// cope with a refused step (one refused by hand: no profile refuses any).
func TestStepsOnProfiles(t *testing.T) {
	var names []string
	for _, s := range Steps {
		names = append(names, s.Name)
	}
	labtest.EveryStepRuns(t, Lesson, names)
	if _, err := compile.Version(); err == nil {
		for _, s := range Steps {
			src, _ := kv.Source(s.File)
			if log, err := compile.Assemble(src, compile.Options{Arch: "sm_75"}); err != nil {
				t.Errorf("%s for sm_75: %v\n%s", s.File, err, log)
			}
		}
	}
	rec, err := record.LoadFS(results.FS, ID)
	if err != nil {
		t.Skip("no recorded run:", err)
	}
	run := lab.WithoutRefused(rec, map[string]lab.StepCheck{"float4": {Step: "float4", File: "3_float4.cu", Refused: "test refusal", Instead: "grid-stride"}})
	for _, tb := range Tables(run) {
		for _, row := range tb.Rows {
			if line := strings.Join(row, " | "); strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
				t.Errorf("%s: %s", tb.Title, line)
			}
		}
	}
	if _, err := Figures(run); err != nil {
		t.Errorf("figures without float4: %v", err)
	}
}

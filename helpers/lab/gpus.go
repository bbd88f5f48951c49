package lab

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// StepCheck says whether one step of a lesson runs on a GPU and, if not, why and which step runs in
// its place.
type StepCheck struct {
	Step    string   `json:"step"`              // as the lesson's records name it
	File    string   `json:"file"`              // its kernel source
	Defines []string `json:"defines,omitempty"` // what the source is compiled with
	Need    string   `json:"need,omitempty"`    // the compute capability its source declares, "8.0 (cp.async)"
	Refused string   `json:"refused,omitempty"` // why it cannot run on this GPU; "" when it runs
	Instead string   `json:"instead,omitempty"` // the step that runs in its place, when refused
}

// Runs reports whether the step runs.
func (c StepCheck) Runs() bool { return c.Refused == "" }

// Why is a refusal as the reader reads it: the need or limit, and the step that runs instead ("" for
// a step that runs).
func (c StepCheck) Why() string {
	if c.Instead != "" && c.Refused != "" {
		return c.Refused + "; " + c.Instead + " runs instead"
	}
	return c.Refused
}

// Err is nil for a step that runs, else its refusal (Why) as a gpu.ErrUnsupported, so that IsRefusal
// holds and a cell shows it as a note.
func (c StepCheck) Err() error {
	if c.Runs() {
		return nil
	}
	return gpu.Unsupported("%s", c.Why())
}

// CheckStep checks one step on d: first the compute capability its source declares when built with
// defines (compile.Required), then plan, the step's own plan at the lesson's shape on d (nil when
// the step has none). Only refusals because of the GPU (gpu.ErrUnsupported, a declared need) count:
// another error of the plan is a bug of the lesson and is reported as such.
func CheckStep(dir compile.Files, step, file string, defines []string, d gpu.DeviceInfo, plan func() error) StepCheck {
	c := StepCheck{Step: step, File: file, Defines: defines}
	src, err := dir.Source(file)
	if err != nil {
		c.Refused = err.Error()
		return c
	}
	need := compile.Required(src.Code, defines)
	if need.CC > 0 {
		c.Need = fmt.Sprintf("%s (%s)", compile.CapabilityName(need.CC), need.Why)
		if need.Exact {
			c.Need = fmt.Sprintf("%s only (%s)", compile.CapabilityName(need.CC), need.Why)
		}
		if d.Major > 0 && (d.CC() < need.CC || need.Exact && d.CC() != need.CC) {
			c.Refused = fmt.Sprintf("%s needs %s; this GPU is %s", file, need, d.ComputeCapability())
			return c
		}
	}
	if plan != nil {
		if err := plan(); err != nil {
			if IsRefusal(err) {
				c.Refused = err.Error()
			} else {
				c.Refused = "the lesson's own shape is refused (a bug of the lesson): " + err.Error()
			}
		}
	}
	return c
}

// IsRefusal reports whether err refuses a step because of the GPU: a source compiled below its
// declared need (*compile.NeedError) or a plan's gpu.ErrUnsupported. A refusal is not a failure:
// cells show it as a note naming the need, and runs record it and go on with the other steps.
func IsRefusal(err error) bool {
	if err == nil {
		return false
	}
	_, need := compile.IsNeed(err)
	return need || errors.Is(err, gpu.ErrUnsupported)
}

// WithInstead fills each refused step's Instead, where the lesson left it empty, with the nearest
// earlier step that runs: the ladder's step below it.
func WithInstead(checks []StepCheck) []StepCheck {
	last := ""
	for i, c := range checks {
		if c.Runs() {
			last = c.Step
			continue
		}
		if c.Instead == "" {
			checks[i].Instead = last
		}
	}
	return checks
}

// StepsOn is the lesson's check of every step on d (nil when the lesson declares no steps).
func (l Lesson) StepsOn(d gpu.DeviceInfo) []StepCheck {
	if l.Steps == nil {
		return nil
	}
	return WithInstead(l.Steps(d))
}

// RefusedOn are the lesson's steps that d cannot run, by step name.
func (l Lesson) RefusedOn(d gpu.DeviceInfo) map[string]StepCheck {
	out := map[string]StepCheck{}
	for _, c := range l.StepsOn(d) {
		if !c.Runs() {
			out[c.Step] = c
		}
	}
	return out
}

// RefusedCase is the case under which a run records the steps the GPU cannot run.
const RefusedCase = "refused"

// RefusedRecord is the record a run adds in place of a step the GPU cannot run: kind "refused", no
// timings, the reason and the step that runs instead in its note.
func RefusedRecord(c StepCheck) record.Record {
	return record.Record{Case: RefusedCase, Variant: c.Step, Kind: "refused", Shape: c.File, Note: c.Why()}
}

// Refused are a run's refused records.
func Refused(run *record.Run) []record.Record { return run.Select(RefusedCase) }

// WithoutRefused is run as a GPU that refuses the given steps would have measured it: their records
// dropped from every case, one refused record each added. A recorded run shown under an emulated
// profile in the no-GPU mode goes through it, so no step the profile cannot run shows a time.
func WithoutRefused(run *record.Run, refused map[string]StepCheck) *record.Run {
	if len(refused) == 0 {
		return run
	}
	out := *run
	out.Records = nil
	for _, r := range run.Records {
		if _, ok := refused[r.Variant]; ok && r.Kind != "baseline" {
			continue
		}
		out.Records = append(out.Records, r)
	}
	var checks []StepCheck
	for _, c := range refused {
		checks = append(checks, c)
	}
	slices.SortFunc(checks, func(a, b StepCheck) int { return strings.Compare(a.Step, b.Step) }) // a stable order for tables
	for _, c := range checks {
		out.Add(RefusedRecord(c))
	}
	return &out
}

// RefusedTable lists a run's refused steps with their reasons; ok is false when there are none.
func RefusedTable(run *record.Run) (t show.Table, ok bool) {
	recs := Refused(run)
	if len(recs) == 0 {
		return t, false
	}
	t = show.Table{Title: "Steps this GPU cannot run", Header: []string{"step", "source", "why, and what runs instead"}}
	for _, r := range recs {
		t.Rows = append(t.Rows, []string{r.Variant, r.Shape, r.Note})
	}
	t.Caption = "Refused before compiling or launching, as on " + run.Receipt.Device.Name + "; every other table shows the steps that ran."
	return t, true
}

// ShowRefusal shows a refused step as a note (not an error): what it needs and what this GPU is.
func ShowRefusal(err error) {
	show.Note(show.Warning, "Not on this GPU: "+strings.TrimSpace(err.Error()))
}

// StepsTable is the doctor's table of which steps of the lessons run on d: a row per lesson with
// the steps that run, and a row per refused step with why and what runs instead.
func StepsTable(ls []Lesson, d gpu.DeviceInfo) show.Table {
	t := show.Table{Title: "Which steps run on this GPU", Header: []string{"lesson", "step", "on " + d.Name}}
	refusedAny := 0
	for _, l := range ls {
		checks := l.StepsOn(d)
		if len(checks) == 0 {
			continue
		}
		var runs []string
		for _, c := range checks {
			if c.Runs() {
				runs = append(runs, c.Step)
			}
		}
		t.Rows = append(t.Rows, []string{l.ID, fmt.Sprintf("%d of %d run", len(runs), len(checks)), strings.Join(runs, ", ")})
		for _, c := range checks {
			if !c.Runs() {
				refusedAny++
				t.Rows = append(t.Rows, []string{"", "refused: " + c.Step, RefusedRecord(c).Note})
			}
		}
	}
	t.Caption = fmt.Sprintf("Checked before anything is compiled: each step's declared need (compute capability %s here) and its plan at the lesson's shape against this GPU's limits. %d step(s) refused; every cell still runs, showing the refusal where the step would be. docs/GPUS.md has the same for every GPU profile.",
		d.ComputeCapability(), refusedAny)
	return t
}

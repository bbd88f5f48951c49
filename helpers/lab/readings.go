package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/results"
)

// Figures is what a reading reads its figure from: a lesson's run and its Nsight Compute profiles.
// Either may be nil (a run without profiles, a lesson without a recorded profile).
type Figures struct {
	Run      *record.Run
	Profiles *nsight.File
}

// Label names where the figures come from: the GPU and the date of the run (or of the profiles).
func (f Figures) Label() string {
	switch {
	case f.Run != nil:
		return f.Run.Receipt.Device.Name + ", " + dateOnly(f.Run.Receipt.Date)
	case f.Profiles != nil:
		return f.Profiles.Receipt.GPU + ", " + dateOnly(f.Profiles.Receipt.Date)
	}
	return "no run"
}

// A Reading is one figure a section's run shows and what the lesson says about it. A readings cell
// (Env.ShowReadings) states it from the run on the page, says whether the lesson's claim held on
// this GPU, and sets the recorded run's figure beside it, so that no measured number is typed into
// the notebook's prose.
type Reading struct {
	What   string                        // the figure: "step 4 against torch.compile"
	Value  func(Figures) (float64, bool) // the figure, false when these figures lack it
	Format func(float64) string          // how it reads: Speedup, Millis, Percent, ...
	Claim  string                        // what the lesson says of it ("faster than torch.compile"); empty for none
	Holds  func(float64) bool            // whether the claim held for a value; nil when there is no claim
	Why    string                        // optional: what to look at when the claim did not hold
	Detail func(Figures) string          // optional: more of the figures, said after the value
}

// ShownFigures are the figures a notebook's cells show for lesson l: the run Shown gives (kept on
// this GPU, measured now, or the recorded one in the no-GPU mode) and the profiles (those a Profile
// cell kept on this GPU, else the recorded ones). Without any it returns the error that says so.
func (e *Env) ShownFigures(l Lesson) (Figures, error) {
	var f Figures
	run, err := e.Last(l, false)
	if err == nil {
		f.Run = run
	}
	f.Profiles = e.shownProfiles(l.ID)
	if f.Run == nil && f.Profiles == nil {
		return f, err
	}
	return f, nil
}

// RecordedFigures are the recorded run of lesson id and its recorded profiles (results/), each nil
// when not recorded.
func RecordedFigures(id string) Figures {
	var f Figures
	if run, err := record.LoadFS(results.FS, id); err == nil {
		f.Run = run
	}
	if p, err := nsight.Load(results.Profiles, id); err == nil {
		f.Profiles = p
	}
	return f
}

// shownProfiles is the profile file of a lesson a Profile cell kept on this GPU (same GPU name),
// else the recorded one; nil when neither exists.
func (e *Env) shownProfiles(id string) *nsight.File {
	if f := e.keptProfile(id); f != nil {
		return f
	}
	if f, err := nsight.Load(results.Profiles, id); err == nil {
		return f
	}
	return nil
}

// keptProfilesDir is where Profile cells keep the profiles they measured (KeptProfile), laid out as
// results/ is (profiles/<lesson>.json) so nsight.Load reads both.
func keptProfilesDir() (string, error) {
	dir, err := KeptRunsDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "profiled"), nil
}

// KeepProfile saves the profile of an original step measured in a notebook cell, so that a later
// readings cell (a new process) cites it. Profiles of the reader's own code are not kept: readings
// speak of the lesson's steps. Profiles of other steps already kept for the lesson stay.
func KeepProfile(f *nsight.File) error {
	dir, err := keptProfilesDir()
	if err != nil {
		return err
	}
	merged := &nsight.File{Lesson: f.Lesson, Receipt: f.Receipt}
	if old, err := nsight.Load(os.DirFS(dir), f.Lesson); err == nil && old.Receipt.GPU == f.Receipt.GPU {
		for _, p := range old.Profiles {
			if !hasStep(f.Profiles, p.Step) {
				merged.Profiles = append(merged.Profiles, p)
			}
		}
	}
	for _, p := range f.Profiles {
		if strings.HasPrefix(p.Step, "your ") {
			continue
		}
		p.Step = strings.TrimPrefix(p.Step, "the original ")
		merged.Profiles = append(merged.Profiles, p)
	}
	return nsight.Save(filepath.Join(dir, "profiles"), merged)
}

func hasStep(ps []nsight.Profile, step string) bool {
	for _, p := range ps {
		if strings.TrimPrefix(p.Step, "the original ") == step {
			return true
		}
	}
	return false
}

// ShowReadings is a readings cell: for each reading, its figure on the figures this page shows and
// whether the lesson's claim held there; on a GPU the recorded run's figure is set beside it
// (labelled with its GPU and date), and in the no-GPU mode the recorded run is the one read, and
// the cell says so.
func (e *Env) ShowReadings(l Lesson, rs ...Reading) error {
	shown, err := e.ShownFigures(l)
	if err != nil {
		return e.NoRecording(err)
	}
	show.Markdown(Readings(shown, RecordedFigures(l.ID), e.GPU(), rs...))
	return nil
}

// Readings is ShowReadings' Markdown: the readings on shown, with recorded beside them when
// onGPU (shown is then this GPU's run).
func Readings(shown, recorded Figures, onGPU bool, rs ...Reading) string {
	var b strings.Builder
	if onGPU {
		fmt.Fprintf(&b, "**What the run on this page shows** (%s).\n\n", shown.Label())
	} else {
		fmt.Fprintf(&b, "**What the recorded run shows** (%s: this page shows the recorded run, not one measured here).\n\n", shown.Label())
	}
	for _, r := range rs {
		b.WriteString("* " + reading(r, shown, recorded, onGPU) + "\n")
	}
	return b.String()
}

func reading(r Reading, shown, recorded Figures, onGPU bool) string {
	format := r.Format
	if format == nil {
		format = show.Num
	}
	v, ok := r.Value(shown)
	if !ok {
		return fmt.Sprintf("%s: not in this run.", r.What)
	}
	s := fmt.Sprintf("%s: **%s**", r.What, format(v))
	if r.Detail != nil {
		if d := r.Detail(shown); d != "" {
			s += " (" + d + ")"
		}
	}
	if onGPU {
		if rv, ok := r.Value(recorded); ok {
			s += fmt.Sprintf("; the recorded run (%s) had %s", recorded.Label(), format(rv))
		}
	}
	s += "."
	if r.Claim != "" && r.Holds != nil {
		where := "on this GPU"
		if !onGPU {
			where = "in the recorded run"
		}
		if r.Holds(v) {
			s += fmt.Sprintf(" The lesson's claim, %s, held %s.", r.Claim, where)
		} else {
			s += fmt.Sprintf(" The lesson's claim, %s, did **not** hold %s.", r.Claim, where)
			if r.Why != "" {
				s += " " + r.Why
			}
		}
	}
	return s
}

func dateOnly(rfc string) string {
	if len(rfc) >= 10 {
		return rfc[:10]
	}
	return rfc
}

// Ratio is a reading's value: the median time of variant base over that of variant, both of case c
// in the run (above 1 when variant is faster).
func Ratio(c, base, variant string) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		b, v := f.Run.Median(c, base), f.Run.Median(c, variant)
		if b <= 0 || v <= 0 {
			return 0, false
		}
		return b / v, true
	}
}

// Median is a reading's value: the median time in ms of variant of case c.
func Median(c, variant string) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		v := f.Run.Median(c, variant)
		return v, v > 0
	}
}

// BandwidthShare is a reading's value: the share (%) of the measured copy bandwidth that variant of
// case c moved (its first record of that case).
func BandwidthShare(c, variant string) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		for _, r := range f.Run.Select(c) {
			if r.Variant == variant && r.PctBW > 0 {
				return r.PctBW, true
			}
		}
		return 0, false
	}
}

// PeakShare is a reading's value: the share (%) of the peak of its own format (Receipt.FLOPShare:
// the FP32 peak on the CUDA cores, the tensor-core peak of its format) that variant of case c reached.
func PeakShare(c, variant string) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		for _, r := range f.Run.Select(c) {
			if r.Variant == variant {
				if pct, _, ok := f.Run.Receipt.FLOPShare(r); ok {
					return pct, true
				}
			}
		}
		return 0, false
	}
}

// ProfileMetric is a reading's value: metric (an ncu metric name) of the largest kernel profiled for
// step in the figures' profiles.
func ProfileMetric(step, metric string) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Profiles == nil {
			return 0, false
		}
		for _, p := range f.Profiles.Profiles {
			if strings.TrimPrefix(p.Step, "the original ") == step {
				return p.Kernel.Value(metric)
			}
		}
		return 0, false
	}
}

// Speedup formats a ratio as "1.54x".
func Speedup(v float64) string { return show.Times(v) }

// Millis formats a time in ms with its unit (show.MS).
func Millis(v float64) string { return show.MS(v) }

// Percent formats a share as "87.3%".
func Percent(v float64) string { return show.Pct(v) }

// Above is a claim's test: the value is above x.
func Above(x float64) func(float64) bool { return func(v float64) bool { return v > x } }

// Below is a claim's test: the value is below x.
func Below(x float64) func(float64) bool { return func(v float64) bool { return v < x } }

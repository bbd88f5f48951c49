package lab

import (
	"os"

	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// ShowProfileReadings is a readings cell whose readings cite profiles alone (ProfileMetric): the
// profiles a Profile cell kept on this GPU, else the recorded ones (results/profiles), labelled with
// their own GPU and date. Unlike ShowReadings it neither loads nor measures the lesson's run, so it
// may follow a Profile cell anywhere in a notebook. On a GPU whose profile was kept, the recorded
// profiles' figures are set beside it.
func (e *Env) ShowProfileReadings(l Lesson, rs ...Reading) error {
	rec := RecordedFigures(l.ID)
	shown := Figures{Profiles: e.keptProfile(l.ID)}
	onGPU := shown.Profiles != nil
	if !onGPU {
		shown.Profiles = rec.Profiles
	}
	if shown.Profiles == nil {
		show.Note(show.Info, "No profile of "+l.ID+" was kept on this GPU or recorded: run the Profile cell above.")
		return nil
	}
	show.Markdown(Readings(shown, Figures{Profiles: rec.Profiles}, onGPU, rs...))
	return nil
}

// keptProfile is the profile file of a lesson that a Profile cell kept on this GPU (KeepProfile),
// nil without a GPU or without one.
func (e *Env) keptProfile(id string) *nsight.File {
	if !e.GPU() {
		return nil
	}
	dir, err := keptProfilesDir()
	if err != nil {
		return nil
	}
	f, err := nsight.Load(os.DirFS(dir), id)
	if err != nil || f.Receipt.GPU != e.Receipt.Device.Name {
		return nil
	}
	return f
}

package oneflow

import (
	"path/filepath"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// Each notebook cell is a new process, so a section measured in one cell is saved where the
// later cells (the targets, the figures) find it: the cache folder's runs/.
func sectionPath(section string) (string, error) {
	dir, err := compile.CacheDir() // .../ptx
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "runs", ID+"_"+section+".json"), nil
}

// SectionResults returns a section's results: measured now in the GPU mode (and saved for later
// cells), the recorded run of the whole lesson in the no-GPU mode.
func SectionResults(env *lab.Env, section string, quick bool) (*record.Run, error) {
	if !env.GPU() {
		return env.Recorded(ID)
	}
	run, err := RunSection(env, section, quick)
	if err != nil {
		return nil, err
	}
	if path, perr := sectionPath(section); perr == nil {
		run.Save(path) // a cache that cannot be written only costs the later cells their numbers
	}
	return run, nil
}

// Collected returns the whole lesson's results for the closing cells: in the GPU mode the sections
// saved by earlier cells of this session (a section not measured yet is measured now), in the
// no-GPU mode the recorded run.
func Collected(env *lab.Env, quick bool) (*record.Run, error) {
	if !env.GPU() {
		return env.Recorded(ID)
	}
	run := env.NewRun(ID)
	for _, sec := range Sections {
		path, err := sectionPath(sec)
		var part *record.Run
		if err == nil {
			part, err = record.Load(path)
		}
		if err != nil || part.Receipt.Device.Name != env.Receipt.Device.Name {
			if part, err = SectionResults(env, sec, quick); err != nil {
				return nil, err
			}
		}
		run.Merge(part)
	}
	return run, nil
}

// ShowSection measures (GPU mode) or loads (no-GPU mode) one section and displays its tables and
// charts. In the no-GPU mode without a recorded run it says so and returns nil.
func ShowSection(env *lab.Env, section string, quick bool) error {
	run, err := SectionResults(env, section, quick)
	if err != nil {
		return env.NoRecording(err)
	}
	for _, t := range SectionTables(run, section) {
		t.Display()
	}
	figs, err := SectionFigures(run, section)
	if err != nil {
		return err
	}
	return lab.ShowPlots(figs)
}

// ShowTargets displays the targets table and the compile reports of the whole lesson.
func ShowTargets(env *lab.Env, quick bool) error {
	run, err := Collected(env, quick)
	if err != nil {
		return env.NoRecording(err)
	}
	TargetsTable(run).Display()
	show.Reports("Compile reports (block 256)", run.Kernels).Display()
	return nil
}

// ShowSource displays one of the lesson's kernel files with line numbers.
func ShowSource(file string) error { return lab.ShowSource(ko.Kernels, file) }

// CompileAll compiles every kernel file of the lesson for the env's architecture and shows a
// line per file (and, on a GPU, loads them): the no-GPU mode's proof that the kernels are valid.
func CompileAll(env *lab.Env) error {
	if err := env.CompileFiles(ko.Kernels, ko.Files(), nil); err != nil {
		return show.Error(err)
	}
	return nil
}

package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/results"
)

// ShowProfile shows a lesson's recorded Nsight Compute profiles (results/profiles, made by make
// profile on a GPU): the table of what each profiled step's kernel did (throughputs, hit rates,
// occupancy, bank conflicts, pipe use) and the chart of its warp stall reasons, labelled with the
// GPU and the date. It needs no GPU and no profiler.
func (e *Env) ShowProfile(lesson string) error {
	f, err := nsight.Load(results.Profiles, lesson)
	if err != nil {
		return err
	}
	return nsight.Show(f)
}

// profileTask is the rerun task of Profile's child process; profileCodeEnv tells the child whose
// code it runs (profileOriginal or profileYours).
// profileStepEnv names the trial (lesson/step) the child is to run: a cell may profile several
// steps, and the child, which runs the whole cell again, passes over the others.
const (
	profileTask     = "profile"
	profileCodeEnv  = "KERNELS_PROFILE_CODE"
	profileStepEnv  = "KERNELS_PROFILE_STEP"
	profileOriginal = "original"
	profileYours    = "yours"
)

// ErrOtherStep is ProfileTrial's answer, in a child process of Profile, for a trial the child is
// not there to run (the cell profiles several steps; each child runs one): the caller goes on.
var ErrOtherStep = errors.New("another step is being profiled")

// trialKey names trial t for profileStepEnv.
func trialKey(t Trial) string { return t.Lesson + "/" + t.Step }

// ProfileRecordedEnv, set to 1, makes Profile cells show the recorded profile instead of running
// Nsight Compute: how the GPU matrix (lessons/matrix) runs the notebooks under emulated profiles,
// whose counters would be this GPU's anyway and whose replays would take most of its time.
const ProfileRecordedEnv = "KERNELS_PROFILE_RECORDED"

// ProfileLimit is how long one run under Nsight Compute may take (it replays each profiled launch
// once per group of counters: tens of times).
const ProfileLimit = 3 * time.Minute

// Profile runs the original step of trial t once under Nsight Compute (ncu), and the reader's code
// once more when code is not empty, each in a child process, with the sections and metrics that
// answer the lesson's question (nsight.ForStep, the same as the recorded profiles), and shows the
// two profiles side by side and the chart of their warp stall reasons. The children are this same
// program started again under ncu (rerun): the notebook's own process keeps no profiler state, and
// nothing is left on the GPU afterwards.
//
// Where it cannot profile it says what it needs: a GPU (the no-GPU mode shows the recorded profile
// of the original step, when results/profiles has one), the CUDA toolkit's ncu, or, where the
// driver keeps the GPU's counters for administrators (ERR_NVGPUCTRPERM), how to allow them. A
// compile error is returned, as Try does.
func (e *Env) Profile(t Trial, code string) error {
	if os.Getenv(ProfileRecordedEnv) == "1" && rerun.Task() == "" {
		show.Note(show.Info, "Profiling is off in this run ("+ProfileRecordedEnv+"=1, as the GPU matrix runs the notebooks): the recorded profile of the original "+t.Step+" instead.")
		showRecordedProfile(results.Profiles, t)
		return nil
	}
	f, err := e.ProfileTrial(t, code)
	if errors.Is(err, ErrOtherStep) {
		return nil
	}
	var ce *nsight.CountersError
	var ne *needsError
	switch {
	case errors.As(err, &ce):
		show.Note(show.Warning, ce.Error())
		showRecordedProfile(results.Profiles, t)
		return nil
	case errors.As(err, &ne):
		show.Note(ne.kind, ne.msg)
		if !e.GPU() {
			showRecordedProfile(results.Profiles, t)
		}
		return nil
	case err != nil:
		return err
	}
	if err := KeepProfile(f); err != nil { // for the readings cells that cite it
		show.Note(show.Warning, "This profile could not be kept for the readings cells below: "+err.Error())
	}
	return nsight.Show(f)
}

// needsError is what ProfileTrial cannot do here, and what it needs.
type needsError struct {
	kind string // the note's kind (show.Info, show.Warning)
	msg  string
}

func (e *needsError) Error() string { return e.msg }

// ProfileTrial is Profile's measurement, not shown: the profiles of the original step and (when code
// is not empty) of the reader's code, in that order, with a receipt of this GPU and this ncu. A
// profile whose run failed its check carries the run's own result in its Note. Without a GPU or
// ncu its error says what is needed; with the counters restricted it is a *nsight.CountersError.
func (e *Env) ProfileTrial(t Trial, code string) (*nsight.File, error) {
	if rerun.Task() == profileTask {
		if os.Getenv(profileStepEnv) != trialKey(t) {
			return nil, ErrOtherStep
		}
		if os.Getenv(profileCodeEnv) != profileYours {
			code = ""
		}
		runOnce(e, t, code, ProfileLimit) // does not return
	}
	if t.Close != nil {
		defer t.Close()
	}
	who, reps, err := e.compileForTool(t, code)
	if err != nil {
		return nil, err
	}
	if !e.GPU() {
		return nil, &needsError{show.Info, fmt.Sprintf("%s compiled. Profiling it needs a GPU (%s) and Nsight Compute (ncu, from the CUDA toolkit).", capital(who), e.Mode)}
	}
	tool, err := nsight.FindTool()
	if err != nil {
		return nil, &needsError{show.Warning, "Profiling " + who + " needs Nsight Compute: " + err.Error()}
	}
	var kernels []string
	for _, r := range reps {
		kernels = append(kernels, r.Kernel)
	}
	target := nsight.ForStep(t.Lesson, t.Step, kernels)
	f := &nsight.File{Lesson: t.Lesson, Receipt: nsight.Receipt{GPU: e.Receipt.Device.Name, Driver: e.Receipt.DriverRelease,
		NCU: tool.String(), Date: time.Now().UTC().Format(time.RFC3339), Commit: record.ProjectCommit(),
		Command: "this cell's program, run again under ncu for one check of each kernel"}}
	f.Receipt.Host, _ = os.Hostname()
	runs := []string{profileOriginal}
	if code != "" {
		runs = append(runs, profileYours)
	}
	known := nsight.KnownMetrics(tool)
	for i, which := range runs {
		tg := target
		tg.Step = "the original " + t.Step
		if which == profileYours {
			tg.Step, tg.Question = "your "+t.Step, ""
		}
		p, err := e.profileOnce(tool, tg, known, which, trialKey(t))
		if err != nil {
			return nil, err
		}
		if i == 0 && code != "" && p.Question == "" {
			p.Question = "the same launch of the original and of yours, side by side"
		}
		f.Profiles = append(f.Profiles, *p)
	}
	return f, nil
}

// profileOnce runs the cell's program under ncu for target tg with the code which names (the child
// runs the trial key names and passes over the cell's other Profile calls), and
// collects its profile (nsight.Collect). The run's own result, when its check did not pass, goes
// in the profile's Note.
func (e *Env) profileOnce(tool nsight.Tool, tg nsight.Target, known map[string]bool, which, key string) (*nsight.Profile, error) {
	var last rerun.Result
	p, err := nsight.Collect(tg, known, func(opts nsight.Options) (*nsight.Result, error) {
		wrapper := append([]string{tool.Path}, nsight.Args(opts)...)
		res, err := rerun.Run(rerun.Spec{Wrapper: wrapper, Task: profileTask, Timeout: ProfileLimit,
			Env: []string{QuickEnv + "=1", profileCodeEnv + "=" + which, profileStepEnv + "=" + key}})
		if err != nil {
			return nil, err
		}
		last = res
		if res.TimedOut {
			return nil, fmt.Errorf("%s under Nsight Compute did not finish in %s: %w", tg.Step, roundSec(ProfileLimit), context.DeadlineExceeded)
		}
		out, err := nsight.Parse(tool, wrapper, res.Output)
		var ce *nsight.CountersError
		if err != nil && !errors.As(err, &ce) {
			if line := childLine(res.Output); line != "" {
				return nil, fmt.Errorf("profiling %s: %w\nThe run's own result: %s", tg.Step, err, line)
			}
			return nil, fmt.Errorf("profiling %s (%v): %w\n%s", tg.Step, res.Err, err, tail(res.Output, 15))
		}
		return out, err
	})
	if err != nil {
		return nil, err
	}
	if line := childLine(last.Output); line != "" && line != childPassed {
		p.Note = strings.TrimSpace(p.Note + " The run's own result: " + line)
	}
	return p, nil
}

// showRecordedProfile shows the recorded profile of t's original step (fsys: results.Profiles),
// when one is recorded.
func showRecordedProfile(fsys fs.FS, t Trial) {
	f, err := nsight.Load(fsys, t.Lesson)
	if err != nil {
		return
	}
	var mine []nsight.Profile
	for _, p := range f.Profiles {
		if p.Step == t.Step {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return
	}
	show.Note(show.Info, "The recorded profile of the original "+t.Step+":")
	if err := nsight.Show(&nsight.File{Lesson: f.Lesson, Receipt: f.Receipt, Profiles: mine}); err != nil {
		show.Note(show.Warning, err.Error())
	}
}

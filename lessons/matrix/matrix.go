// Package matrix runs every notebook of the suite under every GPU profile (KERNELS_EMULATE) and
// records what happened: for each profile and notebook, the cells run, the cells that show an
// error, the steps that ran and the steps refused with their reasons. It is how the suite proves
// that a reader with a T4, an A100, an A10 or an L4 can run every notebook (results/gpus.json,
// docs/GPUS.md), on whichever GPU is present: limits are emulated, timings are the host's.
//
//	res, err := matrix.Run(matrix.Config{Root: ".", Profiles: []string{"t4", "l4"}, Quick: true})
package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons"
)

// Defaults are the profiles the matrix runs when none are named: one GPU of each compute
// capability readers have (7.5, 8.0, 8.6, 8.9, 9.0).
var Defaults = []string{"t4", "a100-80", "a10", "l4", "h100-sxm"}

// Config says what to run and how.
type Config struct {
	Root      string   // the project root (notebooks/ is under it)
	Profiles  []string // profile keys; Defaults when empty
	Notebooks []string // notebook file names under notebooks/ ("03_matmul.ipynb"); every one when empty
	// Runner executes one notebook: the command with {in} and {out} replaced by the notebook's and
	// the executed copy's paths. Empty: nbrun when it is on PATH, else jupyter nbconvert.
	Runner  []string
	Jobs    int           // notebooks run at once (1 when 0): timings suffer, the verdicts do not
	Work    string        // executed copies and one cache folder per profile; a temporary folder when empty
	Quick   bool          // the short method (KERNELS_QUICK=1): fewer repetitions and sweep points
	Timeout time.Duration // per notebook; 20 minutes when 0
	Env     []string      // more environment for the runs (GOFLAGS=-tags=nocuda in the no-GPU mode)
	Commit  string        // the project's commit, recorded in every result ("" when unknown)
	Log     io.Writer     // one line per notebook run; nil: none
	// Done, when set, is called with each run's result as it finishes (one call at a time), so a
	// caller can save what finished before the whole matrix has.
	Done func(Result)
}

// Refusal is a step a run refused, with its reason.
type Refusal struct {
	Lesson string `json:"lesson"`
	Step   string `json:"step"`
	Why    string `json:"why"`
}

// Result is one notebook run under one profile.
type Result struct {
	Profile     string `json:"profile"`
	ProfileName string `json:"profile_name"`
	Notebook    string `json:"notebook"`
	Executed
	Seconds float64 `json:"seconds"`
	// RunnerError is the runner's failure (it could not execute the notebook at all), or "".
	RunnerError string `json:"runner_error,omitempty"`
	// StepsRun and Refused come from the runs the notebook's cells kept (measured on the GPU), or,
	// where no cell measured (the no-GPU mode), from the lesson's checks of its steps (Source
	// "checked").
	StepsRun []string  `json:"steps_run"`
	Refused  []Refusal `json:"refused"`
	Source   string    `json:"steps_source"`     // "measured" or "checked"
	Device   string    `json:"device"`           // as the runs name it: the profile's limits on the host
	Host     string    `json:"host,omitempty"`   // the GPU the run ran on (cmd/gpus sets it)
	Commit   string    `json:"commit,omitempty"` // the project's commit that ran (Config.Commit)
	Date     string    `json:"date,omitempty"`
}

// OK reports whether the notebook ran every cell with no error.
func (r Result) OK() bool {
	return r.RunnerError == "" && len(r.Errors) == 0 && r.Cells > 0 && r.CellsRun == r.Cells
}

// File is results/gpus.json: the matrix and its receipt.
type File struct {
	Date    string   `json:"date"`
	Host    string   `json:"host_gpu"`
	Driver  string   `json:"driver,omitempty"`
	CUDA    string   `json:"cuda_driver,omitempty"`
	NVRTC   string   `json:"nvrtc,omitempty"`
	Method  string   `json:"method"`
	Mode    string   `json:"mode"` // "GPU mode" or "no-GPU mode"
	Runner  string   `json:"runner"`
	Results []Result `json:"results"`
}

// Notebooks lists the suite's notebooks (notebooks/NN_*.ipynb and NNb_*.ipynb under root), sorted.
func Notebooks(root string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(root, "notebooks", "[0-9][0-9]*_*.ipynb"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no notebooks in %s", filepath.Join(root, "notebooks"))
	}
	return out, nil
}

// DefaultRunner is nbrun when it is on PATH (it executes a notebook through its kernel without
// Jupyter), else Jupyter's nbconvert; both go on after a failing cell so that every error counts.
func DefaultRunner() ([]string, error) {
	if p, err := exec.LookPath("nbrun"); err == nil {
		return []string{p, "-allow-errors", "-timeout", "10m", "-o", "{out}", "{in}"}, nil
	}
	if p, err := exec.LookPath("jupyter"); err == nil {
		return []string{p, "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
			"--ExecutePreprocessor.timeout=600", "--output", "{out}", "{in}"}, nil
	}
	return nil, fmt.Errorf("neither nbrun nor jupyter is on PATH: install Jupyter (bash .ci/setup.sh) to run the notebooks")
}

// Run executes every notebook under every profile and returns one Result each, in profile then
// notebook order. A profile the GPU cannot emulate, or a missing runner, is an error before
// anything runs; a notebook that fails is a Result with its errors, not an error.
func Run(cfg Config) ([]Result, error) {
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = Defaults
	}
	var profiles []gpu.Profile
	for _, key := range cfg.Profiles {
		p, err := gpu.LookupProfile(key)
		if err != nil {
			return nil, err
		}
		profiles = append(profiles, p)
	}
	nbs := cfg.Notebooks
	if len(nbs) == 0 {
		var err error
		if nbs, err = Notebooks(cfg.Root); err != nil {
			return nil, err
		}
	}
	for _, nb := range nbs {
		if _, err := os.Stat(filepath.Join(cfg.Root, "notebooks", nb)); err != nil {
			return nil, fmt.Errorf("notebook %s: %w", nb, err)
		}
	}
	runner := cfg.Runner
	if len(runner) == 0 {
		var err error
		if runner, err = DefaultRunner(); err != nil {
			return nil, err
		}
	}
	if cfg.Work == "" {
		dir, err := os.MkdirTemp("", "gpus-matrix-")
		if err != nil {
			return nil, err
		}
		cfg.Work = dir
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Minute
	}
	type job struct {
		i  int
		p  gpu.Profile
		nb string
	}
	var jobs []job
	for _, p := range profiles {
		for _, nb := range nbs {
			jobs = append(jobs, job{len(jobs), p, nb})
		}
	}
	results := make([]Result, len(jobs))
	queue := make(chan job)
	var wg sync.WaitGroup
	var logMu sync.Mutex
	for w := 0; w < max(1, cfg.Jobs); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				r := runOne(cfg, runner, j.p, j.nb)
				results[j.i] = r
				logMu.Lock()
				if cfg.Log != nil {
					fmt.Fprintln(cfg.Log, r.Line())
				}
				if cfg.Done != nil {
					cfg.Done(r)
				}
				logMu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	return results, nil
}

// Line is the result in one line, for progress output.
func (r Result) Line() string {
	verdict := "ok"
	if !r.OK() {
		verdict = "FAIL"
	}
	s := fmt.Sprintf("%-9s %-22s %-4s %d/%d cells, %d errors, %d steps run, %d refused, %.0f s",
		r.Profile, r.Notebook, verdict, r.CellsRun, r.Cells, len(r.Errors), len(r.StepsRun), len(r.Refused), r.Seconds)
	if r.RunnerError != "" {
		s += ": " + r.RunnerError
	}
	for _, e := range r.Errors {
		s += fmt.Sprintf("\n    cell %d: %s", e.Cell, clip(e.Message, 300))
	}
	return s
}

// runOne executes one notebook under one profile, with its own cache folder per profile (compiled
// PTX, the copy bandwidth and the runs the cells keep).
func runOne(cfg Config, runner []string, p gpu.Profile, nb string) Result {
	r := Result{Profile: p.Key, ProfileName: p.Name, Notebook: nb, Commit: cfg.Commit, Date: time.Now().UTC().Format(time.RFC3339)}
	cache := filepath.Join(cfg.Work, "cache-"+p.Key)
	out := filepath.Join(cfg.Work, p.Key, nb)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		r.RunnerError = err.Error()
		return r
	}
	in := filepath.Join(cfg.Root, "notebooks", nb)
	args := make([]string, len(runner))
	for i, a := range runner {
		args[i] = strings.NewReplacer("{in}", in, "{out}", out).Replace(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = filepath.Join(cfg.Root, "notebooks")
	cmd.Env = append(os.Environ(), gpu.EmulateEnv+"="+p.Key, "KERNELS_CACHE_DIR="+cache,
		lab.ProfileRecordedEnv+"=1") // ncu's replays would dominate the matrix, and counters are this GPU's, not the profile's
	// Notebooks at once on one GPU: their cells take turns at it. A lock given from outside
	// (.ci/record.sh: other tasks share this GPU) is kept, so the matrix's cells take turns with theirs.
	if os.Getenv(lab.GPULockEnv) == "" && cfg.Jobs > 1 {
		cmd.Env = append(cmd.Env, lab.GPULockEnv+"="+filepath.Join(cfg.Work, "gpu.lock"))
	}
	if cfg.Quick {
		cmd.Env = append(cmd.Env, lab.QuickEnv+"=1")
	}
	cmd.Env = append(cmd.Env, cfg.Env...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	err := cmd.Run()
	r.Seconds = time.Since(start).Seconds()
	ex, ierr := Inspect(out)
	switch {
	case ierr != nil:
		r.RunnerError = fmt.Sprintf("%v (runner: %v): %s", ierr, err, clip(output.String(), 800))
	case err != nil && ctx.Err() != nil:
		r.RunnerError = fmt.Sprintf("over the %v limit", cfg.Timeout)
	case err != nil:
		r.RunnerError = fmt.Sprintf("runner: %v: %s", err, clip(output.String(), 800))
	}
	r.Executed = ex
	r.fillSteps(cache, p, nb)
	return r
}

// fillSteps fills the steps run and refused: from the runs the notebook's cells kept under the
// profile, else from the lesson's own checks of its steps on the profile's device.
func (r *Result) fillSteps(cache string, p gpu.Profile, nb string) {
	var l lab.Lesson
	found := false
	for _, x := range lessons.All() {
		if x.HasNotebook(nb) {
			l, found = x, true
		}
	}
	if !found {
		return
	}
	id := l.ID
	if run, err := record.Load(filepath.Join(cache, "runs", id+".json")); err == nil && emulates(run, p) {
		r.Source, r.Device = "measured", run.Receipt.Device.Name
		r.StepsRun, r.Refused = stepsOf(run)
		return
	}
	r.Source, r.Device = "checked", p.Name
	for _, c := range l.StepsOn(p.Device()) {
		if c.Runs() {
			r.StepsRun = append(r.StepsRun, c.Step)
		} else {
			r.Refused = append(r.Refused, Refusal{Lesson: id, Step: c.Step, Why: lab.RefusedRecord(c).Note})
		}
	}
}

// emulates reports whether run was measured on a GPU emulating p (not a recorded run that a cell
// kept in the no-GPU mode).
func emulates(run *record.Run, p gpu.Profile) bool {
	em := run.Receipt.Device.Emulation
	return em != nil && em.Profile == p.Key
}

// stepsOf lists a run's kernel steps (each once, in the order measured) and its refused steps.
func stepsOf(run *record.Run) (steps []string, refused []Refusal) {
	for _, rec := range run.Records {
		switch rec.Kind {
		case "kernel":
			if !slices.Contains(steps, rec.Variant) {
				steps = append(steps, rec.Variant)
			}
		case "refused":
			refused = append(refused, Refusal{Lesson: run.Lesson, Step: rec.Variant, Why: rec.Note})
		}
	}
	return steps, refused
}

// Merge puts results into f, replacing those of the same profile and notebook, in profile order
// (as gpu.Profiles lists them) then notebook order.
func (f *File) Merge(results []Result) {
	key := func(r Result) string { return r.Profile + "\x00" + r.Notebook }
	byKey := map[string]Result{}
	for _, r := range f.Results {
		byKey[key(r)] = r
	}
	for _, r := range results {
		byKey[key(r)] = r
	}
	rank := map[string]int{}
	for i, p := range gpu.Profiles {
		rank[p.Key] = i
	}
	f.Results = f.Results[:0]
	for _, r := range byKey {
		f.Results = append(f.Results, r)
	}
	sort.Slice(f.Results, func(i, j int) bool {
		a, b := f.Results[i], f.Results[j]
		if a.Profile != b.Profile {
			return rank[a.Profile] < rank[b.Profile]
		}
		return a.Notebook < b.Notebook
	})
}

// Join merges the results of parts into f (Merge), the parts run apart (on several GPUs of one
// machine, or one after another), and takes the receipt of the last part. Parts of another mode
// than f's, or than each other's, are an error naming both.
func (f *File) Join(parts ...*File) error {
	for i, p := range parts {
		if f.Mode != "" && p.Mode != "" && p.Mode != f.Mode {
			return fmt.Errorf("matrix: part %d is of the %s and the file of the %s: one mode per file", i+1, p.Mode, f.Mode)
		}
		f.Merge(p.Results)
		if p.Mode != "" {
			f.Date, f.Host, f.Driver, f.CUDA, f.NVRTC = p.Date, p.Host, p.Driver, p.CUDA, p.NVRTC
			f.Method, f.Mode, f.Runner = p.Method, p.Mode, p.Runner
		}
	}
	return nil
}

// Load reads a File; a missing file is an empty File.
func Load(path string) (*File, error) {
	f := &File{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Save writes f as indented JSON.
func (f *File) Save(path string) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

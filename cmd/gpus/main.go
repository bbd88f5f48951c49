// Command gpus runs every notebook under every GPU profile (KERNELS_EMULATE) on the GPU present and
// records the outcome in results/gpus.json and docs/GPUS.md: cells run, errors, steps run, steps
// refused with their reasons. It is how the suite proves it runs on the GPUs readers have (T4,
// A100, A10, L4) while developed on an H100.
//
//	go run ./cmd/gpus                                     # the default profiles, every notebook, short method
//	go run ./cmd/gpus -profiles t4,l4 -notebooks 03_matmul.ipynb -jobs 2
//	go run -tags nocuda ./cmd/gpus -render                # docs/GPUS.md again from results/gpus.json
//	go run -tags nocuda ./cmd/gpus -merge a.json,b.json   # parts run apart, joined into results/gpus.json
//
// Notebooks run through nbrun when it is on PATH, else jupyter nbconvert, -jobs at once from every
// (profile, notebook) pair, the results file saved after each run; each profile gets its own
// cache folder. Without a GPU the notebooks run in the no-GPU mode (recorded timings, emulated
// limits), which the file says.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons/matrix"
)

func main() {
	profiles := flag.String("profiles", strings.Join(matrix.Defaults, ","), "profile keys, comma-separated")
	notebooks := flag.String("notebooks", "", "notebook file names under notebooks/, comma-separated (all when empty)")
	jobs := flag.Int("jobs", 2, "notebook runs at once, drawn from every (profile, notebook) pair")
	quick := flag.Bool("quick", true, "the short method (KERNELS_QUICK=1)")
	results := flag.String("results", "results/gpus.json", "the matrix file: new results are merged into it")
	docs := flag.String("docs", "docs/GPUS.md", "the page rendered from the matrix file")
	render := flag.Bool("render", false, "only render the page from the matrix file and the lessons' step checks")
	work := flag.String("work", "", "folder for executed copies and caches (a temporary one when empty)")
	merge := flag.String("merge", "", "comma-separated matrix files run apart (make record's parts) to join into -results, then render -docs; nothing runs")
	flag.Parse()
	if *merge != "" {
		*render = true
		if err := join(*results, split(*merge)); err != nil {
			fmt.Fprintln(os.Stderr, "gpus:", err)
			os.Exit(1)
		}
	}
	if err := run(*profiles, *notebooks, *jobs, *quick, *results, *docs, *render, *work); err != nil {
		fmt.Fprintln(os.Stderr, "gpus:", err)
		os.Exit(1)
	}
}

func run(profiles, notebooks string, jobs int, quick bool, results, docs string, render bool, work string) error {
	f, err := matrix.Load(results)
	if err != nil {
		return err
	}
	failed := 0
	if !render {
		// Every (profile, notebook) pair in one pool of jobs, the file saved after each run: a
		// run cut short keeps what finished.
		if failed, err = measure(f, split(profiles), split(notebooks), jobs, quick, work, results); err != nil {
			return err
		}
		fmt.Println("gpus: wrote", results)
	}
	if err := os.MkdirAll(filepath.Dir(docs), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(docs, []byte(matrix.Markdown(f)), 0o644); err != nil {
		return err
	}
	fmt.Println("gpus: wrote", docs)
	if failed > 0 {
		return fmt.Errorf("%d notebook runs had errors (recorded in %s)", failed, results)
	}
	return nil
}

// measure runs the matrix, merging each run into f and saving f at results as it finishes; failed
// counts the notebook runs with errors.
func measure(f *matrix.File, profiles, notebooks []string, jobs int, quick bool, work, results string) (failed int, err error) {
	env, err := lab.OpenWith(lab.Options{Quick: quick})
	if err != nil {
		return 0, err
	}
	r := env.Receipt
	env.Close() // the notebooks' kernels open the GPU themselves
	if f.Mode != "" && f.Mode != env.Mode.String() {
		// Never mix modes in one file: a run without a GPU must not replace the GPU's results.
		return 0, fmt.Errorf("the matrix file holds %s results and this run is in the %s (%v): write it to another file with -results out/gpus.json", f.Mode, env.Mode, env.Why)
	}
	root, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	cfg := matrix.Config{Root: root, Profiles: profiles, Notebooks: notebooks, Jobs: jobs, Quick: quick, Work: work, Log: os.Stdout, Commit: record.ProjectCommit()}
	if !env.GPU() {
		cfg.Env = append(cfg.Env, "GOFLAGS=-tags=nocuda "+os.Getenv("GOFLAGS")) // as .ci/jupyter.sh runs the kernel
	}
	runner, err := matrix.DefaultRunner()
	if err != nil {
		return 0, err
	}
	cfg.Runner = runner
	host := r.Device.Hardware().Name
	f.Host, f.Driver, f.CUDA, f.NVRTC = host, r.DriverRelease, r.CUDADriver, r.NVRTC
	f.Mode, f.Runner, f.Method = env.Mode.String(), filepath.Base(runner[0]), r.Method
	if !env.GPU() { // the receipt is the recorded run's: nothing ran on a GPU
		f.Host, f.Driver, f.CUDA = "no GPU (the notebooks show the recorded "+host+" run)", "", ""
		f.Method = "nothing timed: the no-GPU mode compiles every kernel and runs the CPU references"
		host = "no GPU"
	}
	var saveErr error
	cfg.Done = func(x matrix.Result) { // f is saved only from here, after a run is merged
		x.Host = host
		f.Merge([]matrix.Result{x})
		f.Date = time.Now().UTC().Format(time.RFC3339)
		if err := f.Save(results); err != nil && saveErr == nil {
			saveErr = err
		}
		if !x.OK() {
			failed++
		}
	}
	start := time.Now()
	res, err := matrix.Run(cfg)
	if err != nil {
		return 0, err
	}
	if saveErr != nil {
		return failed, saveErr
	}
	fmt.Printf("gpus: %d notebook runs in %v, %d with errors\n", len(res), time.Since(start).Round(time.Second), failed)
	return failed, nil
}

// join merges the matrix files parts into the file at results (File.Join) and saves it.
func join(results string, parts []string) error {
	f, err := matrix.Load(results)
	if err != nil {
		return err
	}
	var loaded []*matrix.File
	for _, p := range parts {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("a part to merge: %w", err)
		}
		part, err := matrix.Load(p)
		if err != nil {
			return err
		}
		loaded = append(loaded, part)
	}
	if err := f.Join(loaded...); err != nil {
		return err
	}
	if err := f.Save(results); err != nil {
		return err
	}
	fmt.Printf("gpus: joined %d part(s) into %s\n", len(parts), results)
	return nil
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// Command sanitize runs the suite's sanitizer pass: each package's TestSanitize (every kernel it owns,
// launched once on small awkward shapes and checked) under NVIDIA compute-sanitizer's memcheck,
// racecheck and synccheck, several runs at once, each under its own time limit. It prints one line
// per package and tool, writes the pass (receipt, runs, the kernels each run launched, the kernel
// sources' digests) to <out>/sanitize.json, and exits with status 1 on any error, hazard, failed or
// unfinished run, or kernel of a lesson that a run did not launch.
//
//	go run ./cmd/sanitize                              # every package with a TestSanitize
//	go run ./cmd/sanitize -tools racecheck ./lessons/reduce
//	go run ./cmd/sanitize -out results                 # record the pass (results/sanitize.json)
//	go run -tags nocuda ./cmd/sanitize -summary results/sanitize.json   # README's lines, no GPU
//
// It needs a GPU and the CUDA toolkit's compute-sanitizer: $COMPUTE_SANITIZER, else $CUDA_HOME's,
// else the newest /usr/local/cuda-*/bin/compute-sanitizer (an older one may not attach to a newer
// driver), else /usr/local/cuda's or the one on PATH.
// Each run's whole output is kept in -logs.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/sanitize"
	"github.com/cudalessons/cudalessons/lessons"
)

func main() {
	tools := flag.String("tools", strings.Join(sanitize.Tools, ","), "compute-sanitizer tools, comma-separated")
	jobs := flag.Int("jobs", defaultJobs(), "runs at once (they share the GPU)")
	limit := flag.Duration("limit", 10*time.Minute, "the time each run may take")
	out := flag.String("out", "out", "folder for sanitize.json")
	logs := flag.String("logs", ".scratch/sanitize", "folder for each run's output")
	summary := flag.String("summary", "", "print the summary lines of this recorded pass and exit (no GPU needed)")
	flag.Parse()
	if *summary != "" {
		p, err := sanitize.Load(*summary)
		if err != nil {
			fail(err)
		}
		for _, l := range p.Summary() {
			fmt.Println(l)
		}
		return
	}
	p, err := run(strings.FieldsFunc(*tools, func(r rune) bool { return r == ',' || r == ' ' }), flag.Args(), *jobs, *limit, *out, *logs)
	if err != nil {
		fail(err)
	}
	if len(p.Failed()) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sanitize:", err)
	os.Exit(1)
}

// defaultJobs is half the CPUs, at most 9: a sanitized process keeps a core busy, and the GPU is
// shared.
func defaultJobs() int { return max(1, min(9, runtime.NumCPU()/2)) }

// job is one package's test binary under one tool.
type job struct {
	pkg  target
	tool string
}

// target is a package with a TestSanitize and its test binary.
type target struct {
	path, rel, dir, bin string
}

func run(tools, patterns []string, jobs int, limit time.Duration, out, logs string) (sanitize.Pass, error) {
	for _, t := range tools {
		if !slices.Contains(sanitize.Tools, t) {
			return sanitize.Pass{}, fmt.Errorf("no tool %q (the tools: %s)", t, strings.Join(sanitize.Tools, ", "))
		}
	}
	sanitizer, version, err := findSanitizer()
	if err != nil {
		return sanitize.Pass{}, err
	}
	s, err := gpu.Open()
	if err != nil {
		return sanitize.Pass{}, fmt.Errorf("the sanitizers watch kernels run, so they need a GPU: %w", err)
	}
	device := s.Device
	s.Close()
	nvrtc, _ := compile.Version()
	targets, err := findTargets(patterns)
	if err != nil {
		return sanitize.Pass{}, err
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return sanitize.Pass{}, err
	}
	bins, err := os.MkdirTemp("", "sanitize")
	if err != nil {
		return sanitize.Pass{}, err
	}
	defer os.RemoveAll(bins)
	start := time.Now()
	fmt.Printf("sanitize: %s at %s; %d packages x %d tools, %d at once, each up to %v\n",
		version, sanitizer, len(targets), len(tools), jobs, limit)
	if err := build(targets, bins, jobs); err != nil {
		return sanitize.Pass{}, err
	}

	var queue []job
	for _, t := range targets {
		for _, tl := range tools {
			queue = append(queue, job{t, tl})
		}
	}
	runs := make([]sanitize.Run, len(queue))
	parallel(len(queue), jobs, func(i int) {
		runs[i] = runOne(sanitizer, queue[i], limit, logs)
		fmt.Println(runs[i].Line()) // one write: lines of runs that end together do not mix
	})

	folders := lessons.KernelFolders()
	sources, err := sanitize.SourcesOf(folders)
	if err != nil {
		return sanitize.Pass{}, err
	}
	pass := sanitize.Pass{
		Receipt: sanitize.Receipt{
			GPU: device.Name, Driver: lab.DriverRelease(), CUDADriver: device.Driver(), NVRTC: nvrtc,
			Sanitizer: version, Date: start.UTC().Format(time.RFC3339), Commit: record.ProjectCommit(),
			Jobs: jobs, LimitS: int(limit.Seconds()), WallS: time.Since(start).Round(time.Second).Seconds(),
		},
		Runs:    runs,
		Sources: sources,
	}
	pass.RequireEveryKernel(folders)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return pass, err
	}
	path := filepath.Join(out, "sanitize.json")
	if err := pass.Save(path); err != nil {
		return pass, err
	}
	for _, r := range pass.Failed() {
		fmt.Printf("FAILED: %s under %s: %s (log: %s)\n", r.Package, r.Tool, r.Verdict, logPath(logs, r.Package, r.Tool))
	}
	for _, l := range pass.Summary() {
		fmt.Println(l)
	}
	fmt.Printf("sanitize: %d of %d runs clean; wrote %s\n", len(runs)-len(pass.Failed()), len(runs), path)
	return pass, nil
}

// runOne runs one package's TestSanitize under one tool, from the package's folder (as go test
// does), and judges it from its output.
func runOne(sanitizer string, j job, limit time.Duration, logs string) sanitize.Run {
	r := sanitize.Run{Tool: j.tool, Package: j.pkg.rel}
	launchFile, err := os.CreateTemp("", "launches")
	if err != nil {
		r.Verdict = err.Error()
		return r
	}
	launchFile.Close()
	defer os.Remove(launchFile.Name())
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, sanitizer, "--tool", j.tool, "--error-exitcode", "1",
		j.pkg.bin, "-test.run", "^"+sanitize.TestName+"$", "-test.count=1", "-test.v")
	cmd.Dir = j.pkg.dir
	cmd.Env = append(os.Environ(), gpu.SanitizerEnv+"="+j.tool, gpu.LaunchRecordEnv+"="+launchFile.Name())
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	err = cmd.Run()
	r.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	if launched, rerr := gpu.ReadLaunches(launchFile.Name()); rerr == nil {
		r.Launched = launched
	}
	r.Judge(output.String(), err, errors.Is(ctx.Err(), context.DeadlineExceeded))
	os.WriteFile(logPath(logs, r.Package, r.Tool), output.Bytes(), 0o644)
	return r
}

func logPath(logs, pkg, tool string) string {
	return filepath.Join(logs, strings.ReplaceAll(pkg, "/", ".")+"."+tool+".log")
}

// findTargets lists the packages matching the patterns (default ./...) that have a TestSanitize.
func findTargets(patterns []string) ([]target, error) {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}"}, patterns...)
	listed, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", goError(err))
	}
	module, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", goError(err))
	}
	prefix := strings.TrimSpace(string(module)) + "/"
	var out []target
	for _, line := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		for _, file := range strings.Split(f[2], ",") {
			if file == "" {
				continue
			}
			code, err := os.ReadFile(filepath.Join(f[1], file))
			if err == nil && bytes.Contains(code, []byte("func "+sanitize.TestName+"(t *testing.T)")) {
				out = append(out, target{path: f[0], rel: strings.TrimPrefix(f[0], prefix), dir: f[1]})
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no package matching %s has a %s", strings.Join(patterns, " "), sanitize.TestName)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// build compiles the packages' test binaries, jobs at once.
func build(targets []target, dir string, jobs int) error {
	errs := make([]error, len(targets))
	for i := range targets {
		targets[i].bin = filepath.Join(dir, strings.ReplaceAll(targets[i].rel, "/", ".")+".test")
	}
	parallel(len(targets), jobs, func(i int) {
		if out, err := exec.Command("go", "test", "-c", "-o", targets[i].bin, targets[i].path).CombinedOutput(); err != nil {
			errs[i] = fmt.Errorf("building %s's tests: %v\n%s", targets[i].rel, err, out)
		}
	})
	return errors.Join(errs...)
}

// parallel calls f(0) to f(n-1), at most jobs at once, and returns when all have returned.
func parallel(n, jobs int, f func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, jobs)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			f(i)
		}()
	}
	wg.Wait()
}

// findSanitizer is compute-sanitizer's path and version line.
func findSanitizer() (path, version string, err error) {
	var tried []string
	candidates := []string{os.Getenv("COMPUTE_SANITIZER")}
	if home := os.Getenv("CUDA_HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, "bin", "compute-sanitizer"))
	}
	toolkits, _ := filepath.Glob("/usr/local/cuda-*/bin/compute-sanitizer")
	sort.Slice(toolkits, func(i, j int) bool { return newerToolkit(toolkits[i], toolkits[j]) })
	candidates = append(candidates, toolkits...)
	candidates = append(candidates, "/usr/local/cuda/bin/compute-sanitizer")
	if p, err := exec.LookPath("compute-sanitizer"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		tried = append(tried, c)
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			out, err := exec.Command(c, "--version").Output()
			if err != nil {
				return "", "", fmt.Errorf("%s --version: %w", c, err)
			}
			version = "compute-sanitizer"
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "Version") {
					version += " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "Version"))
				}
			}
			return c, version, nil
		}
	}
	return "", "", fmt.Errorf("compute-sanitizer not found (tried %s): it comes with the CUDA toolkit, in its bin folder; use the toolkit that matches your driver (CUDA 13 for driver 580) or set COMPUTE_SANITIZER to its path", strings.Join(tried, ", "))
}

// newerToolkit orders /usr/local/cuda-X.Y paths newest first.
func newerToolkit(a, b string) bool {
	va, vb := toolkitVersion(a), toolkitVersion(b)
	for i := range min(len(va), len(vb)) {
		if va[i] != vb[i] {
			return va[i] > vb[i]
		}
	}
	return len(va) > len(vb)
}

func toolkitVersion(path string) []int {
	name := filepath.Base(filepath.Dir(filepath.Dir(path))) // cuda-13.0
	var out []int
	for _, part := range strings.Split(strings.TrimPrefix(name, "cuda-"), ".") {
		n := 0
		fmt.Sscanf(part, "%d", &n)
		out = append(out, n)
	}
	return out
}

func goError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

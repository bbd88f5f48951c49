package sanitize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/sanitize/output"
)

// Tools are compute-sanitizer's tools the pass runs, each over every package's TestSanitize:
// memcheck (out-of-bounds and misaligned device accesses, failed CUDA calls), racecheck
// (shared-memory data races between a block's threads) and synccheck (barriers that not every
// thread reaches).
var Tools = []string{"memcheck", "racecheck", "synccheck"}

// TestName is the test each package with GPU kernels has for the pass: every kernel it owns,
// launched once on small awkward shapes and checked.
const TestName = "TestSanitize"

// Pass is one sanitizer pass (cmd/sanitize): its receipt, one Run per package and tool, and the
// kernel sources it ran (results/sanitize.json keeps the recorded one).
type Pass struct {
	Receipt Receipt `json:"receipt"`
	Runs    []Run   `json:"runs"`
	// Sources is a digest of each kernel source of the lessons at the time of the pass
	// ("kernels/rwkv/3_batch_group.cu": the first 12 hex digits of its SHA-256), so that a kernel
	// changed since is known not to be covered by it.
	Sources map[string]string `json:"sources"`
}

// Receipt says where and how a pass ran.
type Receipt struct {
	GPU        string  `json:"gpu"`
	Driver     string  `json:"driver"`      // the driver's release, e.g. 580.159.04
	CUDADriver string  `json:"cuda_driver"` // the CUDA version the driver supports
	NVRTC      string  `json:"nvrtc"`
	Sanitizer  string  `json:"sanitizer"` // compute-sanitizer's version line
	Date       string  `json:"date"`
	Commit     string  `json:"commit"` // the project's commit, "+changes" when the tree differed
	Jobs       int     `json:"jobs"`   // runs at once
	LimitS     int     `json:"limit_s"`
	WallS      float64 `json:"wall_s"` // the whole pass
}

// Run is one package's TestSanitize under one tool.
type Run struct {
	Tool     string  `json:"tool"`
	Package  string  `json:"package"`  // e.g. lessons/rwkv
	Kernels  int     `json:"kernels"`  // distinct kernels launched
	Launches int     `json:"launches"` // launches in all
	Errors   int     `json:"errors"`
	Hazards  int     `json:"hazards"` // racecheck's hazards (its errors and warnings together)
	Seconds  float64 `json:"seconds"`
	Tests    string  `json:"tests"` // PASS, FAIL, or none when the test's verdict never came
	// Verdict is "ok", or why the run failed: errors, hazards, a failed test, a timeout, no summary.
	Verdict  string       `json:"verdict"`
	Launched []gpu.Launch `json:"launched"`
}

// OK reports whether the run was clean: it finished, the sanitizer found nothing and the test passed.
func (r Run) OK() bool { return r.Verdict == "ok" }

var testVerdict = regexp.MustCompile(`(?m)^(PASS|FAIL)$`)

// Judge fills the run's errors, hazards, tests and verdict from compute-sanitizer's output (the
// test binary's output inside it) and the process's exit: exitErr is nil for exit status 0, and
// timedOut says the run was stopped at its limit.
func (r *Run) Judge(log string, exitErr error, timedOut bool) {
	var summary bool
	r.Errors, r.Hazards, summary = output.Summary(log)
	r.Tests = "none"
	if m := testVerdict.FindAllStringSubmatch(log, -1); len(m) > 0 {
		r.Tests = m[len(m)-1][1]
	}
	r.Kernels = len(r.Launched)
	r.Launches = 0
	for _, l := range r.Launched {
		r.Launches += l.Count
	}
	switch {
	case timedOut:
		r.Verdict = "stopped at its time limit"
	case !summary:
		r.Verdict = "no sanitizer summary (did it attach?)"
	case r.Errors > 0:
		r.Verdict = fmt.Sprintf("%d errors", r.Errors)
	case r.Hazards > 0:
		r.Verdict = fmt.Sprintf("%d hazards", r.Hazards)
	case r.Tests != "PASS":
		r.Verdict = "the test did not pass (" + r.Tests + ")"
	case exitErr != nil:
		r.Verdict = "exit: " + exitErr.Error()
	case r.Kernels == 0:
		r.Verdict = "no kernel launched (no launch record)"
	default:
		r.Verdict = "ok"
	}
}

// Failed lists the runs that were not clean.
func (p Pass) Failed() []Run {
	var out []Run
	for _, r := range p.Runs {
		if !r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// Line is one run as a line of the printed table.
func (r Run) Line() string {
	found := fmt.Sprintf("%d errors", r.Errors)
	if r.Tool == "racecheck" {
		found = fmt.Sprintf("%d hazards", r.Hazards)
	}
	return fmt.Sprintf("%-18s %-10s %4d kernels %6d launches  %-10s tests %-4s %5.0f s  %s",
		r.Package, r.Tool, r.Kernels, r.Launches, found, r.Tests, r.Seconds, r.Verdict)
}

// Summary is one line per tool: packages, kernels launched, errors or hazards, the longest run and
// the receipt, as README shows them.
func (p Pass) Summary() []string {
	var out []string
	for _, tool := range Tools {
		var pkgs, kernels, launches, found, failed int
		var longest float64
		for _, r := range p.Runs {
			if r.Tool != tool {
				continue
			}
			pkgs++
			kernels += r.Kernels
			launches += r.Launches
			found += r.Errors + r.Hazards
			longest = max(longest, r.Seconds)
			if !r.OK() {
				failed++
			}
		}
		if pkgs == 0 {
			continue
		}
		what := "errors"
		if tool == "racecheck" {
			what = "hazards"
		}
		verdict := "clean"
		if failed > 0 {
			verdict = fmt.Sprintf("%d of %d runs failed", failed, pkgs)
		}
		out = append(out, fmt.Sprintf("%s: %d packages, %d kernels, %d launches, %d %s, %s; longest run %.0f s",
			tool, pkgs, kernels, launches, found, what, verdict, longest))
	}
	rc := p.Receipt
	out = append(out, fmt.Sprintf("the whole pass: %.0f s, %d runs at once, on %s (driver %s, CUDA %s), %s, %s, commit %s",
		rc.WallS, rc.Jobs, rc.GPU, rc.Driver, rc.CUDADriver, rc.Sanitizer, rc.Date, rc.Commit))
	return out
}

// Digest is the digest of a kernel source that Pass.Sources keeps.
func Digest(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])[:12]
}

// SourcesOf is the digest of every .cu file of the folders, by folder and file
// ("kernels/rwkv/3_batch_group.cu").
func SourcesOf(dirs []compile.Files) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range dirs {
		for _, f := range d.List() {
			if !strings.HasSuffix(f, ".cu") {
				continue
			}
			src, err := d.Source(f)
			if err != nil {
				return nil, err
			}
			out[d.Pkg+"/"+f] = Digest(src.Code)
		}
	}
	return out, nil
}

// Changed lists the kernel sources of now (SourcesOf) that the pass did not run as they are: new,
// changed or gone, sorted.
func (p Pass) Changed(now map[string]string) []string {
	var out []string
	for f, d := range now {
		switch old, ok := p.Sources[f]; {
		case !ok:
			out = append(out, f+" (new)")
		case old != d:
			out = append(out, f+" (changed)")
		}
	}
	for f := range p.Sources {
		if _, ok := now[f]; !ok {
			out = append(out, f+" (gone)")
		}
	}
	slices.Sort(out)
	return out
}

// RequireEveryKernel marks as failed each clean run of a folder's package (PackageOf) that did not
// launch every kernel of the folder, its verdict naming those it missed.
func (p *Pass) RequireEveryKernel(dirs []compile.Files) {
	for _, d := range dirs {
		for i := range p.Runs {
			r := &p.Runs[i]
			if r.Package != PackageOf(d) || !r.OK() {
				continue
			}
			if err := MissingError(d, r.Launched); err != nil {
				r.Verdict = err.Error()
			}
		}
	}
}

// Covers checks that the pass ran the package of every folder under every tool, cleanly, and that
// each of those runs launched every kernel of the folder (RequireEveryKernel, on a copy).
func (p Pass) Covers(dirs []compile.Files) error {
	judged := Pass{Runs: slices.Clone(p.Runs)}
	judged.RequireEveryKernel(dirs)
	var problems []string
	for _, d := range dirs {
		pkg := PackageOf(d)
		for _, tool := range Tools {
			i := slices.IndexFunc(judged.Runs, func(r Run) bool { return r.Package == pkg && r.Tool == tool })
			switch {
			case i < 0:
				problems = append(problems, fmt.Sprintf("%s: no %s run", pkg, tool))
			case !judged.Runs[i].OK():
				problems = append(problems, fmt.Sprintf("%s under %s: %s", pkg, tool, judged.Runs[i].Verdict))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the sanitizer pass does not cover every kernel:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// PackageOf is the lesson package whose TestSanitize launches a kernel folder's kernels:
// lessons/rwkv for kernels/rwkv.
func PackageOf(dir compile.Files) string { return "lessons/" + strings.TrimPrefix(dir.Pkg, "kernels/") }

// Load reads a pass from a JSON file.
func Load(path string) (Pass, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Pass{}, err
	}
	return decode(path, data)
}

// LoadFS reads a pass from a file of fsys (results.FS, "sanitize.json").
func LoadFS(fsys fs.FS, name string) (Pass, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Pass{}, err
	}
	return decode(name, data)
}

func decode(name string, data []byte) (Pass, error) {
	var p Pass
	if err := json.Unmarshal(data, &p); err != nil {
		return Pass{}, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// Save writes the pass as indented JSON.
func (p Pass) Save(path string) error {
	data, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

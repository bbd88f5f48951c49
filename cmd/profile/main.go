// Command profile records the Nsight Compute profiles the notebooks show: for each lesson, the
// steps whose claim matters most (Targets), each run once by the lesson's own Try cell in a child
// process under ncu, with the sections that answer the lesson's question and the warp stall
// reasons. It writes <out>/<lesson>.json per lesson (helpers/nsight.File, with a receipt) and
// prints each lesson's table. It needs a GPU, ncu (the CUDA toolkit's) and permission to read the
// GPU's counters.
//
//	go run ./cmd/profile -out results/profiles
//	go run ./cmd/profile -out /tmp/p -lessons 00_setup,03_matmul
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// childFlag runs one step in this process (the profiled child): -child <lesson>/<step>.
const childFlag = "child"

func main() {
	out := flag.String("out", "results/profiles", "folder for <lesson>.json")
	only := flag.String("lessons", "", "comma-separated lesson IDs (default: every lesson with a target)")
	timeout := flag.Duration("timeout", 3*time.Minute, "limit for each profiled step")
	child := flag.String(childFlag, "", "(internal) run one step: <lesson>/<step>")
	flag.Parse()
	if *child != "" {
		if err := runChild(*child); err != nil {
			fmt.Fprintln(os.Stderr, "profile child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *only, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		var ce *nsight.CountersError
		if errors.As(err, &ce) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

// runChild runs a lesson's step once as its Try cell does (the original code, quick method), with
// nothing shown: ncu profiles its kernel's launches.
func runChild(spec string) error {
	id, step, ok := strings.Cut(spec, "/")
	l, found := lessonByID(id)
	if !ok || !found {
		return fmt.Errorf("-child %q: want <lesson>/<step> of a known lesson", spec)
	}
	show.Out = io.Discard
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		return err
	}
	defer env.Close()
	if !env.GPU() {
		return fmt.Errorf("no GPU: %v", env.Why)
	}
	return l.Try(env, step, "")
}

func run(out, only string, timeout time.Duration) error {
	tool, err := nsight.FindTool()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		if id = strings.TrimSpace(id); id != "" {
			if _, ok := lessonByID(id); !ok {
				return fmt.Errorf("-lessons: no lesson %q", id)
			}
			want[id] = true
		}
	}
	known := availableMetrics(tool)
	receipt := nsight.Receipt{NCU: tool.String(), Date: time.Now().UTC().Format(time.RFC3339), Commit: record.ProjectCommit(),
		Command: self + " -" + childFlag + " <lesson>/<step> (the lesson's Try cell, quick method), under ncu"}
	receipt.GPU, receipt.Driver = gpuName()
	receipt.Host, _ = os.Hostname()
	files := map[string]*nsight.File{}
	var order []string
	failed := 0
	for _, t := range Targets {
		if len(want) > 0 && !want[t.Lesson] {
			continue
		}
		start := time.Now()
		p, err := profile(t, self, known, timeout)
		var ce *nsight.CountersError
		if errors.As(err, &ce) {
			return err // nothing else will profile either
		}
		if err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "profile: %s %s: %v\n", t.Lesson, t.Step, err)
			continue
		}
		fmt.Printf("%s %s: %s, %d metrics (%s)\n", t.Lesson, t.Step, p.Kernel.Name, len(p.Kernel.Metrics), time.Since(start).Round(time.Second))
		f, ok := files[t.Lesson]
		if !ok {
			f = &nsight.File{Lesson: t.Lesson, Receipt: receipt}
			files[t.Lesson] = f
			order = append(order, t.Lesson)
		}
		f.Profiles = append(f.Profiles, *p)
	}
	for _, id := range order {
		f := files[id]
		if f.Receipt.GPU == "" && len(f.Profiles) > 0 {
			f.Receipt.GPU = "GPU " + f.Profiles[0].Kernel.Device + " (compute capability " + f.Profiles[0].Kernel.CC + ")"
		}
		if err := nsight.Save(out, f); err != nil {
			return err
		}
		fmt.Println(nsight.Table(f).Text())
	}
	if failed > 0 {
		return fmt.Errorf("%d of the steps could not be profiled (above); the others are written to %s", failed, out)
	}
	return nil
}

// profile runs one target under ncu and keeps its largest launch. Metrics this ncu lacks are
// dropped before; when ncu still fails, it tries again with the sections alone and says so.
func profile(t Target, self string, known map[string]bool, timeout time.Duration) (*nsight.Profile, error) {
	metrics, dropped := pickMetrics(t, known)
	opts := nsight.Options{Kernel: t.Kernel, LaunchCount: max(1, t.Launches), Sections: t.Sections,
		Metrics: append(metrics, nsight.StallMetrics), Env: []string{lab.QuickEnv + "=1"}}
	argv := []string{self, "-" + childFlag, t.Lesson + "/" + t.Step}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := nsight.Run(ctx, opts, argv)
	note := ""
	if len(dropped) > 0 {
		note = "Not collected (this Nsight Compute has no such metric): " + strings.Join(dropped, ", ") + "."
	}
	var ce *nsight.CountersError
	if err != nil && !errors.As(err, &ce) && ctx.Err() == nil {
		first := err
		opts.Metrics = nil
		res, err = nsight.Run(ctx, opts, argv)
		if err == nil {
			note = strings.TrimSpace(note + " The extra metrics made ncu fail, so only the sections were collected: " + firstLine(first.Error()))
		}
	}
	if err != nil {
		return nil, err
	}
	k := largest(res.Kernels)
	return &nsight.Profile{Step: t.Step, Question: t.Question, Kernel: k, Sections: t.Sections, Note: note}, nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// largest is the profiled launch with the most threads (grid times block): the lesson's own shape,
// not the small shapes a Try cell checks first.
func largest(ks []nsight.Kernel) nsight.Kernel {
	best, bestN := ks[0], -1
	for _, k := range ks {
		if n := threads(k.Grid) * threads(k.Block); n > bestN {
			best, bestN = k, n
		}
	}
	return best
}

var dims = regexp.MustCompile(`\d+`)

// threads multiplies the numbers of "(256, 1, 1)".
func threads(s string) int {
	n := 1
	for _, d := range dims.FindAllString(s, -1) {
		v, _ := strconv.Atoi(d)
		n *= v
	}
	return n
}

// pickMetrics keeps the target's metrics whose base name this ncu knows (all of them when the list
// of known metrics could not be read) and adds the .sum of every known base name that Like matches
// (at most 6).
func pickMetrics(t Target, known map[string]bool) (keep, dropped []string) {
	for _, m := range t.Metrics {
		base, _, _ := strings.Cut(m, ".")
		if known == nil || known[base] {
			keep = append(keep, m)
		} else {
			dropped = append(dropped, m)
		}
	}
	if known == nil || len(t.Like) == 0 {
		return keep, dropped
	}
	var like []string
	for base := range known {
		for _, l := range t.Like {
			if strings.Contains(base, l) && strings.Contains(base, "bytes") {
				like = append(like, base+".sum")
				break
			}
		}
	}
	slices.Sort(like)
	if len(like) > 6 {
		like = like[:6]
	}
	return append(keep, like...), dropped
}

// availableMetrics lists the base metric names ncu knows for GPU 0 (ncu --query-metrics), or nil
// when it cannot say.
func availableMetrics(tool nsight.Tool) map[string]bool {
	out, err := exec.Command(tool.Path, "--query-metrics", "--devices", "0").Output()
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && strings.Contains(f[0], "__") {
			known[f[0]] = true
		}
	}
	if len(known) == 0 {
		return nil
	}
	return known
}

// gpuName asks nvidia-smi for GPU 0's name and the driver's version.
func gpuName() (name, driver string) {
	out, err := exec.Command("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0").Output()
	if err != nil {
		return "", ""
	}
	name, driver, _ = strings.Cut(strings.TrimSpace(string(out)), ",")
	return strings.TrimSpace(name), strings.TrimSpace(driver)
}

// Command profile records the Nsight Compute profiles the notebooks show: for each lesson, the
// steps whose claim matters most (nsight.Targets), each run once by the lesson's own Try cell in a child
// process under ncu, with the sections that answer the lesson's question and the warp stall
// reasons. It writes <out>/<lesson>.json per lesson (helpers/nsight.File, with a receipt) and
// prints each lesson's table. It needs a GPU, ncu (the CUDA toolkit's) and permission to read the
// GPU's counters.
//
// With -sass it records SASS instead, with no GPU needed: the listing of every step a lesson's Walk
// shows whose architecture an older NVRTC cannot compile for (lesson 08's compute_90a), compiled by
// this machine's NVRTC (12.0 or newer) and nvdisasm, into <dir>/<lesson>.json (helpers/sass.File);
// the no-GPU mode shows them where its NVRTC cannot compile the step.
//
//	go run ./cmd/profile -out results/profiles
//	go run ./cmd/profile -out /tmp/p -lessons 00_setup,03_matmul
//	go run ./cmd/profile -sass results/sass
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	sassOut := flag.String("sass", "", "record SASS into this folder (<lesson>.json) instead of profiling: the steps an older NVRTC cannot compile, no GPU needed")
	flag.Parse()
	if *sassOut != "" {
		if err := recordSASS(*sassOut, *only); err != nil {
			fmt.Fprintln(os.Stderr, "profile -sass:", err)
			os.Exit(1)
		}
		return
	}
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
	want, err := chosen(only)
	if err != nil {
		return err
	}
	known := nsight.KnownMetrics(tool)
	receipt := nsight.Receipt{NCU: tool.String(), Date: time.Now().UTC().Format(time.RFC3339), Commit: record.ProjectCommit(),
		Command: self + " -" + childFlag + " <lesson>/<step> (the lesson's Try cell, quick method), under ncu"}
	receipt.GPU, receipt.Driver = gpuName()
	receipt.Host, _ = os.Hostname()
	files := map[string]*nsight.File{}
	var order []string
	failed := 0
	for _, t := range nsight.Targets {
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

// profile runs one target under ncu (nsight.Collect: the metrics this ncu knows, the sections
// alone if they fail, the largest launch).
func profile(t nsight.Target, self string, known map[string]bool, timeout time.Duration) (*nsight.Profile, error) {
	argv := []string{self, "-" + childFlag, t.Lesson + "/" + t.Step}
	return nsight.Collect(t, known, func(opts nsight.Options) (*nsight.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		opts.Env = append(opts.Env, lab.QuickEnv+"=1")
		res, err := nsight.Run(ctx, opts, argv)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w after %s", t.Lesson, t.Step, ctx.Err(), timeout)
		}
		return res, err
	})
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

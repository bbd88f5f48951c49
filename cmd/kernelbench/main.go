// Command kernelbench runs the KernelBench problems that the lessons cover as KernelBench runs
// them, on the GPU: the problem's shapes and input distributions, the reference PyTorch model timed
// eager and under torch.compile, and the lessons' kernels for the same formula timed by the suite's
// method; each judged by KernelBench's rule (five trials of fresh inputs, torch.allclose at
// atol = rtol = 1e-2 against the reference model run on our inputs) and by the suite's float64
// check; then fast_p. It prints the tables and writes a JSON receipt.
//
//	go run ./cmd/kernelbench                         # every problem, out/kernelbench.json
//	go run ./cmd/kernelbench -problems 1,23,L2-1     # some (a bare number is level 1)
//	go run ./cmd/kernelbench -part 2/3               # every third problem from the second on
//	go run ./cmd/kernelbench -small -trials 2        # the same formulas at small shapes, quickly
//	go run ./cmd/kernelbench -merge a.json,b.json -out results/kernelbench.json
//	                                                 # one record from a run split over several calls
//
// The problems, the run and the tables are in helpers/kernelbench, their binding to the lessons'
// kernels in lessons/kernelbench; this command reads the flags, prints and writes. Without a GPU
// (the nocuda build, or no device) it says so and exits with status 2, as cmd/reproduce does; a
// problem that fails makes the status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	lkb "github.com/cudalessons/cudalessons/lessons/kernelbench"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: the exit status (0 done, 1 a problem failed or the receipt could not be
// written, 2 a usage error or no GPU), tables on stdout, progress and errors on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kernelbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out/kernelbench.json", "the JSON receipt to write")
	pick := fs.String("problems", "", "comma-separated problems: 1,23,L2-1 (a bare number is level 1; default: all)")
	part := fs.String("part", "", "k/n: the k-th of n parts of the problems picked, for runs side by side or one after another")
	trials := fs.Int("trials", kb.Trials, "correctness trials of fresh random inputs per problem")
	small := fs.Bool("small", false, "the same formulas at small shapes (a quick end-to-end check, not KernelBench's problems)")
	merge := fs.String("merge", "", "comma-separated reports of one GPU and commit to join into -out (no GPU needed)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kernelbench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *merge != "" {
		return mergeReports(strings.Split(*merge, ","), *out, stdout, stderr)
	}
	all := kb.Problems()
	if *small {
		all = kb.SmallProblems()
	}
	problems, err := kb.Select(all, *pick)
	if err == nil {
		problems, err = kb.Part(problems, *part)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *trials < 1 {
		fmt.Fprintf(stderr, "kernelbench: -trials %d: at least one trial\n", *trials)
		return 2
	}
	env, err := lab.Open()
	if err != nil {
		fmt.Fprintln(stderr, "kernelbench:", err)
		if errors.Is(err, gpu.ErrNoGPU) {
			return 2
		}
		return 1
	}
	defer env.Close()
	if !env.GPU() {
		fmt.Fprintf(stderr, "kernelbench: the KernelBench problems run on a GPU: %v\n", env.Why)
		return 2
	}
	fmt.Fprintln(stdout, env.Banner())
	// The receipt is written after every problem, so a run stopped by a time limit keeps the
	// problems it finished (-merge joins the parts of a run).
	saved := func(r kb.Report) {
		if err := r.Save(*out); err != nil {
			fmt.Fprintln(stderr, "kernelbench:", err)
		}
	}
	rep, err := lkb.Run(env, problems, *trials, func(line string) { fmt.Fprintln(stderr, "kernelbench:", line) }, saved)
	if err != nil {
		fmt.Fprintln(stderr, "kernelbench:", err)
		return 1
	}
	for _, t := range kb.Tables(rep) {
		fmt.Fprintln(stdout, t.Text())
	}
	if err := rep.Save(*out); err != nil {
		fmt.Fprintln(stderr, "kernelbench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	var failed []string
	for _, r := range rep.Results {
		if r.Error != "" {
			failed = append(failed, r.ID)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "kernelbench: failed: %s\n", strings.Join(failed, ", "))
		return 1
	}
	return 0
}

// mergeReports joins the reports at paths into one written to out (kernelbench.MergeReports) and
// prints its tables.
func mergeReports(paths []string, out string, stdout, stderr io.Writer) int {
	var reps []kb.Report
	for _, p := range paths {
		r, err := kb.LoadReport(strings.TrimSpace(p))
		if err != nil {
			fmt.Fprintln(stderr, "kernelbench:", err)
			return 2
		}
		reps = append(reps, r)
	}
	rep, err := kb.MergeReports(reps...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for _, t := range kb.Tables(rep) {
		fmt.Fprintln(stdout, t.Text())
	}
	if err := rep.Save(out); err != nil {
		fmt.Fprintln(stderr, "kernelbench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (%d problems from %d reports)\n", out, len(rep.Results), len(reps))
	return 0
}

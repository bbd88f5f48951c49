// Command hostile feeds every public op of every lesson the inputs models produce (lessons/hostile):
// normal and uniform values from 1e-30 to 1e30, mixed row scales, constant rows, -inf masks, +-inf
// and NaN entries, denormals, rows of one element and very long rows, misaligned views, and the
// shapes where each op changes path. Each output is judged against the float64 reference and
// PyTorch's own op on the same input. It prints one line per case and a summary, writes
// <out>/hostile.json (the receipt: GPU, driver, CUDA, NVRTC, date, commit, seed; and every case's
// verdict and step), and exits with status 1 when a case fails.
//
//	go run ./cmd/hostile -out results                  # record the full run (results/hostile.json)
//	go run ./cmd/hostile -short -ops softmax           # a quick look at one op
//	go run -tags nocuda ./cmd/hostile -summary results/hostile.json   # the recorded run, no GPU
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/hostile"
)

func main() {
	out := flag.String("out", "out", "folder for hostile.json")
	short := flag.Bool("short", false, "only the shapes marked short (a few per op)")
	seed := flag.Uint64("seed", 0, "the run's seed (0: from the clock; recorded either way)")
	ops := flag.String("ops", "", "the ops to run, comma-separated (all when empty): "+opNames())
	quiet := flag.Bool("quiet", false, "print only the summary, not one line per case")
	summary := flag.String("summary", "", "print the summary lines of this recorded run and exit (no GPU needed)")
	flag.Parse()
	if *summary != "" {
		rep, err := hostile.Load(*summary)
		if err != nil {
			fail(err)
		}
		for _, l := range rep.Summary() {
			fmt.Println(l)
		}
		return
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	env, err := lab.Open()
	if err != nil {
		fail(err)
	}
	defer env.Close()
	opts := hostile.Options{Seed: *seed, Short: *short, Log: os.Stdout}
	if *quiet {
		opts.Log = nil
	}
	if *ops != "" {
		opts.Ops = strings.Split(*ops, ",")
	}
	rep, err := hostile.Run(env, opts)
	if err != nil {
		fail(err)
	}
	path := filepath.Join(*out, "hostile.json")
	if err := rep.Save(path); err != nil {
		fail(err)
	}
	for _, l := range rep.Summary() {
		fmt.Println(l)
	}
	fmt.Println("wrote", path)
	if len(rep.Failures()) > 0 {
		os.Exit(1)
	}
}

func opNames() string {
	var names []string
	for _, op := range hostile.Catalogue() {
		names = append(names, op.Name)
	}
	return strings.Join(names, ", ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hostile:", err)
	os.Exit(1)
}

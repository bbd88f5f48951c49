// Command reproduce runs the suite's lessons headless on the GPU, with no Jupyter: for each lesson it
// measures every step and baseline, prints the tables, and writes into the output folder the JSON
// receipt (<lesson>.json), the figures (PNG and SVG) and a Markdown report (report.md).
//
//	go run ./cmd/reproduce -out out            # every lesson
//	go run ./cmd/reproduce -lessons 00,01 -quick
//	go run -tags nocuda ./cmd/reproduce -from results -out results   # tables, figures and report
//	                                                                # again from saved runs, no GPU
//	go run -tags nocuda ./cmd/reproduce -compare class -out cmp      # every GPU's receipts under
//	                                                                # class/ beside results/ and the
//	                                                                # articles, no GPU needed
//	go run -tags nocuda ./cmd/reproduce -readme README.md           # the README's tables of
//	                                                                # recorded results, made again
//	                                                                # from results/
//
// Copy the output folder's JSON, report and figures into results/ to update what the no-GPU mode
// shows. Without a GPU (the nocuda build) it says so and exits with status 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons"
	"github.com/cudalessons/cudalessons/lessons/compare"
)

func main() {
	out := flag.String("out", "out", "output folder for receipts, figures and report.md")
	pick := flag.String("lessons", "", "comma-separated lesson ID prefixes (default: all)")
	quick := flag.Bool("quick", false, "fewer repetitions and sweep points; every table's case at the recorded shapes")
	refresh := flag.Bool("refresh-bandwidth", false, "measure the copy bandwidth again instead of using the cached figure")
	from := flag.String("from", "", "rebuild the tables, figures and report from the runs saved in this folder instead of measuring")
	cmp := flag.String("compare", "", "set the receipts under this folder (one subfolder per machine, or one machine's output) beside the recorded results and the articles; writes compare.md and its figures to -out")
	readme := flag.String("readme", "", "rewrite the generated blocks of this README (the recorded results' tables) from results/, and exit")
	flag.Parse()
	var err error
	switch {
	case *readme != "":
		err = rewriteReadme(*readme)
	case *cmp != "":
		err = compareRuns(*cmp, *out)
	case *from != "":
		err = rebuild(*from, *out, *pick)
	default:
		err = run(*out, *pick, *quick, *refresh)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reproduce:", err)
		if errors.Is(err, gpu.ErrNoGPU) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(out, pick string, quick, refresh bool) error {
	var prefixes []string
	if pick != "" {
		prefixes = strings.Split(pick, ",")
	}
	todo, err := lessons.Pick(prefixes)
	if err != nil {
		return err
	}
	env, err := lab.OpenWith(lab.Options{Quick: quick, RefreshCopyBandwidth: refresh})
	if err != nil {
		return err
	}
	defer env.Close()
	if !env.GPU() {
		return fmt.Errorf("the reproduce command measures on a GPU: %w (the recorded results are in results/)", env.Why)
	}
	fmt.Println(env.Banner())
	var report strings.Builder
	fmt.Fprintf(&report, "# Reproduced results\n\n%s\n\n", env.Receipt)
	var failed []string
	runs := compare.Machine{Label: "this run: " + env.Receipt.Device.Name, Runs: map[string]*record.Run{}}
	for _, l := range todo {
		start := time.Now()
		fmt.Printf("\n=== %s: %s\n", l.ID, l.Title)
		r, err := l.Run(env, quick)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s failed: %v\n", l.ID, err)
			fmt.Fprintf(&report, "## %s\n\nFAILED: %v\n\n", l.Title, err)
			failed = append(failed, l.ID)
			continue
		}
		if l.Plan != nil { // a record the lesson's plan does not name would not line up with the recorded run
			if odd := lab.OutsidePlan(r, l.Plan(quick, env.Session.Device)); len(odd) > 0 {
				fmt.Fprintf(os.Stderr, "%s: records outside the lesson's plan (tell its maintainers): %s\n", l.ID, strings.Join(odd, "; "))
			}
		}
		if err := write(out, l, r, &report); err != nil {
			return err
		}
		runs.Runs[l.ID] = r
		fmt.Printf("(%s in %.0f s)\n", l.ID, time.Since(start).Seconds())
	}
	if len(runs.Runs) > 0 { // this GPU beside the recorded run and the articles
		report.WriteString("## This GPU beside the recorded run and the articles\n\n")
		for _, t := range compare.Tables(append([]compare.Machine{runs}, compare.RecordedMachines()...)) {
			report.WriteString(t.Markdown() + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(report.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", out)
	if len(failed) > 0 {
		return fmt.Errorf("lessons failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// rebuild writes the tables, figures and report of runs saved earlier (each lesson's <ID>.json in
// from), with no GPU: how results/ gets one report from runs made in several invocations.
func rebuild(from, out, pick string) error {
	var prefixes []string
	if pick != "" {
		prefixes = strings.Split(pick, ",")
	}
	todo, err := lessons.Pick(prefixes)
	if err != nil {
		return err
	}
	var report strings.Builder
	report.WriteString("# Reproduced results\n\nEach lesson's section names the GPU, driver, versions, date and method it was measured with.\n\n")
	for _, l := range todo {
		r, err := record.Load(filepath.Join(from, l.ID+".json"))
		if err != nil {
			return fmt.Errorf("%s: %w", l.ID, err)
		}
		fmt.Fprintf(&report, "_Measured: %s._\n\n", r.Receipt)
		if err := write(out, l, r, &report); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, "report.md"), []byte(report.String()), 0o644)
}

func write(out string, l lab.Lesson, r *record.Run, report *strings.Builder) error {
	if err := r.Save(filepath.Join(out, l.ID+".json")); err != nil {
		return err
	}
	fmt.Fprintf(report, "## %s\n\n", l.Title)
	for _, t := range l.Tables(r) {
		fmt.Println(t.Text())
		fmt.Fprintln(report, t.Markdown())
	}
	figs, err := l.Figures(r)
	if err != nil {
		return fmt.Errorf("%s figures: %w", l.ID, err)
	}
	for _, f := range figs {
		for _, ext := range []string{".svg", ".png"} {
			if err := charts.Save(f.Plot, filepath.Join(out, f.Name+ext)); err != nil {
				return err
			}
		}
		fmt.Fprintf(report, "![%s](%s.svg)\n\n", f.Plot.Title.Text, f.Name)
	}
	return nil
}

// compareRuns sets the receipts under dir beside the recorded results and the articles: the
// tables on stdout, compare.md and the figures in out. It needs no GPU.
func compareRuns(dir, out string) error {
	found, err := compare.Load(dir)
	if err != nil {
		return err
	}
	machines := append(compare.RecordedMachines(), found...)
	for _, t := range compare.Tables(machines) {
		fmt.Println(t.Text())
	}
	if err := compare.Write(machines, out); err != nil {
		return err
	}
	fmt.Printf("%d machine(s) beside the recorded run; wrote %s\n", len(found), filepath.Join(out, "compare.md"))
	return nil
}

// rewriteReadme makes the generated blocks of the README at path again from the recorded runs.
func rewriteReadme(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := compare.RecordedReadme(string(old))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if doc == string(old) {
		fmt.Printf("%s is up to date\n", path)
		return nil
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Printf("rewrote the recorded results in %s\n", path)
	return nil
}

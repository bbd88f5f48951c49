package compare

import (
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// The README's generated blocks are what the generator makes from results/ now: a new recorded run,
// or a changed headline, fails here until the blocks are written again.
func TestReadmeIsCurrent(t *testing.T) {
	old, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := RecordedReadme(string(old))
	if err != nil {
		t.Fatal(err)
	}
	if string(old) != want {
		t.Errorf("README.md's recorded results are out of date: run `%s`", ReadmeCommand)
	}
}

// Every lesson has headline readings, and each one has its figure in the recorded run (a headline
// named after a reading that no longer exists, or one the run lacks, fails here).
func TestHeadlinesHaveFigures(t *testing.T) {
	recorded := Recorded()
	for _, l := range lessons.All() {
		hs := lessons.Headlines(l.ID)
		if len(hs) == 0 {
			t.Errorf("%s has no headline readings", l.ID)
		}
		f := machineFigures(recorded, l.ID)
		for _, r := range hs {
			if _, ok := r.Value(f); !ok {
				t.Errorf("%s: headline %q has no figure in the recorded run", l.ID, r.What)
			}
		}
	}
}

// The block names every machine with its receipt and gives every headline a row; a claim that fails
// is said to fail.
func TestHeadlinesMarkdown(t *testing.T) {
	machines := RecordedMachines()
	md := HeadlinesMarkdown(machines)
	if len(machines) != 2 {
		t.Fatalf("%d recorded machines, want results/ and results/h100/", len(machines))
	}
	id := lessons.All()[0].ID
	first, second := machines[0].Runs[id].Receipt, machines[1].Runs[id].Receipt
	for _, want := range []string{"recorded run: " + first.Device.Name + " (results/)", "second machine: " + second.Device.Name + " (results/h100/)",
		"The recorded run (`results/`): " + first.Device.Name + ", driver " + first.DriverRelease, "at commit " + first.Commit} {
		if !strings.Contains(md, want) {
			t.Errorf("the block does not say %q", want)
		}
	}
	rows := 0
	for _, l := range lessons.All() {
		rows += len(lessons.Headlines(l.ID))
	}
	if got := strings.Count(md, "\n| 0"); got != rows {
		t.Errorf("%d rows, want one per headline (%d)", got, rows)
	}
	r := lab.Reading{What: "x", Value: func(lab.Figures) (float64, bool) { return 0.5, true }, Format: lab.Speedup, Claim: "above 1", Holds: lab.Above(1)}
	if c := readingCell(r, lab.Figures{}); c != "**0.50x**, did **not** hold" {
		t.Errorf("a failed claim reads %q", c)
	}
}

// A README without a block's markers is refused with the markers it needs.
func TestReadmeWithoutMarkers(t *testing.T) {
	_, err := RecordedReadme("# no blocks\n")
	if err == nil || !strings.Contains(err.Error(), readmeBegin(LessonsBlock)) {
		t.Fatalf("err = %v", err)
	}
}

// KernelBench's block has every problem of the recorded run, both machines' times and fast_p.
func TestKernelBenchMarkdown(t *testing.T) {
	kb, err := RecordedKernelBench()
	if err != nil {
		t.Fatal(err)
	}
	if len(kb) != 2 {
		t.Fatalf("%d recorded KernelBench runs, want results/ and results/h100/", len(kb))
	}
	md := KernelBenchMarkdown(kb)
	for _, res := range kb[0].Report.Results {
		if !strings.Contains(md, "| "+res.ID+" ") {
			t.Errorf("problem %s missing", res.ID)
		}
	}
	if strings.Count(md, "fast_p over") != 2 {
		t.Error("want one fast_p table per machine")
	}
}

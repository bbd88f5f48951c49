package lab

import (
	"fmt"
	"sort"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Point is one case at one shape that a lesson's run measures: a record's Case and Shape. A sweep
// point is one a quick run may leave out. Every other point is a headline one (the lesson's Compare
// cases and its main tables): a quick run measures it at exactly the shape a full run does, trading
// only repetitions, so that a quick run and a recorded one line up row for row (reproduce -compare).
type Point struct {
	Case, Shape string
	Sweep       bool
}

// Headline is a point of a lesson's main tables.
func Headline(c, shape string) Point { return Point{Case: c, Shape: shape} }

// SweepPoint is a point of a sweep.
func SweepPoint(c, shape string) Point { return Point{Case: c, Shape: shape, Sweep: true} }

// CopyShape is the shape of a run's device-copy record (CopyRecord): the 100% line of its tables.
func CopyShape() string { return fmt.Sprintf("%d MiB copied", bench.CopyBytes>>20) }

// HeadlinePoints are the headline points of a plan, as a set.
func HeadlinePoints(plan []Point) map[Point]bool {
	out := map[Point]bool{}
	for _, p := range plan {
		if !p.Sweep {
			out[p] = true
		}
	}
	return out
}

// planned is the set of (case, shape) a plan names.
func planned(plan []Point) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, p := range plan {
		out[[2]string{p.Case, p.Shape}] = true
	}
	return out
}

// OutsidePlan lists, sorted, the "case @ shape" of a run's records that the plan does not name:
// none when the plan describes the run. A record with no shape (a baseline that could not run,
// saying why) is not counted.
func OutsidePlan(run *record.Run, plan []Point) []string {
	in := planned(plan)
	seen := map[string]bool{}
	var out []string
	for _, r := range run.Records {
		k := r.Case + " @ " + r.Shape
		if r.Shape == "" || in[[2]string{r.Case, r.Shape}] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MissingFromRun lists the plan's points that no record of the run is at.
func MissingFromRun(run *record.Run, plan []Point) []string {
	have := map[[2]string]bool{}
	for _, r := range run.Records {
		have[[2]string{r.Case, r.Shape}] = true
	}
	var out []string
	for _, p := range plan {
		if !have[[2]string{p.Case, p.Shape}] {
			out = append(out, p.Case+" @ "+p.Shape)
		}
	}
	return out
}

// Restrict is a copy of run with only the records at the plan's points: of a recorded full run,
// what a run of the plan (a quick one) measures.
func Restrict(run *record.Run, plan []Point) *record.Run {
	in := planned(plan)
	out := *run
	out.Records = nil
	for _, r := range run.Records {
		if in[[2]string{r.Case, r.Shape}] {
			out.Records = append(out.Records, r)
		}
	}
	return &out
}

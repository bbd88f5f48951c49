// Package gradetest makes the students a grader's tests need: one whose kernel never ends and one
// whose kernel faults, each an edit of an exercise's solution (lesson 02's exercise 1, mul_mine), so
// that everything the check decides without a GPU still passes and only a run shows the mistake.
package gradetest

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Lesson and Exercise name the exercise the edits apply to.
const (
	Lesson   = "02_oneflow"
	Exercise = 1
	Kernel   = "mul_mine"
)

// Mistake is a broken solution and what the grader's verdict says about it on a GPU.
type Mistake struct {
	Name     string
	old, new string
	Verdict  string // in the row's reason on a GPU
}

// Hang makes the grid-stride loop's stride 0 (threads divided by elements): the kernel never ends.
var Hang = Mistake{"a grid-stride loop whose stride is 0",
	"const long long stride = (long long)gridDim.x * blockDim.x;",
	"const long long stride = (long long)gridDim.x * blockDim.x / n;",
	"timed out after 10s in " + Kernel}

// Fault makes every thread read x far past its end: an illegal address.
var Fault = Mistake{"a read far past the end of x",
	"uint4 a = reinterpret_cast<const uint4 *>(x)[i];",
	"uint4 a = reinterpret_cast<const uint4 *>(x)[i + (1LL << 40)];",
	"illegal memory address in " + Kernel}

// Apply returns the answer function for grade.HandedIn: m's edit of the solution for the
// exercise, and the cell's own source for every other exercise.
func (m Mistake) Apply(l lab.Lesson, x lab.Exercise) (string, error) {
	if l.ID != Lesson || x.Number != Exercise {
		return "", nil
	}
	sol, err := x.Solution()
	if err != nil {
		return "", err
	}
	if strings.Count(sol, m.old) != 1 {
		return "", fmt.Errorf("%s #%d: the edit for %s does not apply to the solution", Lesson, Exercise, m.Name)
	}
	return strings.Replace(sol, m.old, m.new, 1), nil
}

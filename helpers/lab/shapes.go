package lab

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/show"
)

// ShapeChecks gathers the checks of one step on several shapes (a Try's awkward shapes) into one
// table: a row per shape saying "pass" with the check's figure, "refused" with a footnote to the
// plan's reason (each distinct reason written once, under the table), or "WRONG" with the check's
// figure.
type ShapeChecks struct {
	Title   string
	rows    [][]string
	reasons []string // distinct refusal reasons, in the order of their first row
	counts  map[string]int
}

// Pass adds a shape the step got right; figure is the check's figure (its errors and bound).
func (c *ShapeChecks) Pass(shape, figure string) { c.add(shape, "pass", figure) }

// Wrong adds a shape the step got wrong; figure says how (the check's verdict).
func (c *ShapeChecks) Wrong(shape, figure string) { c.add(shape, "WRONG", figure) }

// Refuse adds a shape the step's plan refused before any launch, and why.
func (c *ShapeChecks) Refuse(shape string, why error) {
	reason := shapeFree(why.Error())
	n := 0
	for i, r := range c.reasons {
		if r == reason {
			n = i + 1
		}
	}
	if n == 0 {
		c.reasons = append(c.reasons, reason)
		n = len(c.reasons)
	}
	c.add(shape, "refused", fmt.Sprintf("before launch: reason [%d]", n))
}

func (c *ShapeChecks) add(shape, outcome, figure string) {
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[outcome]++
	c.rows = append(c.rows, []string{shape, outcome, figure})
}

// Table is the checks as a table, the refusals' reasons under it.
func (c *ShapeChecks) Table() show.Table {
	t := show.Table{Title: c.Title, Header: []string{"shape", "check", "figure"}, Rows: c.rows}
	caption := fmt.Sprintf("%d shape(s): %d passed, %d refused by the step's plan before any launch, %d wrong.",
		len(c.rows), c.counts["pass"], c.counts["refused"], c.counts["WRONG"])
	var why []string
	for i, r := range c.reasons {
		why = append(why, fmt.Sprintf("[%d] %s", i+1, strings.TrimRight(r, ". ")))
	}
	if len(why) > 0 {
		caption += " Refused: " + strings.Join(why, "; ") + "."
	}
	t.Caption = caption
	return t
}

// shapeParens are parenthesised details of one shape in a plan's reason ("(cols = 37)",
// "(aligned: false)"): the row already names its shape.
var shapeParens = regexp.MustCompile(`\s*\([^()]*[=:][^()]*\)`)

// shapeFree is a refusal's reason without the details of the shape it was given, so that shapes
// refused for one reason share one footnote.
func shapeFree(reason string) string {
	return strings.TrimSpace(shapeParens.ReplaceAllString(reason, ""))
}

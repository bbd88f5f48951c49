package grade

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Solved is the notebook nbJSON (named name, as Find takes it) as a student who solved every
// exercise hands it in: each exercise cell's raw string replaced by the exercise's solution. The
// grader's tests and the classroom hub's test grade such copies beside untouched ones.
func Solved(name string, nbJSON []byte, lessons []lab.Lesson) ([]byte, error) {
	return HandedIn(name, nbJSON, lessons, func(_ lab.Lesson, x lab.Exercise) (string, error) { return x.Solution() })
}

// HandedIn is the notebook nbJSON with each exercise cell's raw string replaced by what answer
// returns for that exercise (the cell's own source when answer returns ""): how the tests make a
// student who solved some exercises and got others wrong in a particular way.
func HandedIn(name string, nbJSON []byte, lessons []lab.Lesson, answer func(l lab.Lesson, x lab.Exercise) (string, error)) ([]byte, error) {
	found, problems, err := Find(name, nbJSON, lessons)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %+v", name, problems)
	}
	var nb map[string]any
	if err := json.Unmarshal(nbJSON, &nb); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cells, _ := nb["cells"].([]any)
	for _, f := range found {
		x, err := f.Lesson.ExerciseByNumber(f.Number)
		if err != nil {
			return nil, err
		}
		code, err := answer(f.Lesson, x)
		if err != nil {
			return nil, err
		}
		if code == "" {
			continue
		}
		cell, _ := cells[f.Cell-1].(map[string]any)
		src, err := source(rawJSON(cell["source"]))
		if err != nil {
			return nil, fmt.Errorf("%s, cell %d: %w", name, f.Cell, err)
		}
		old := "`" + f.Code + "`"
		if strings.Count(src, old) != 1 {
			return nil, fmt.Errorf("%s, cell %d: the exercise's raw string is not found once", name, f.Cell)
		}
		cell["source"] = strings.SplitAfter(strings.Replace(src, old, "`"+code+"`", 1), "\n")
	}
	return json.MarshalIndent(nb, "", " ")
}

// rawJSON re-encodes a decoded cell source for source, which reads the notebook format's string or
// list of lines.
func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

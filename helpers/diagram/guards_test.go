package diagram

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// TestGuardRules checks the rules the guards diagram states against the code that applies them.
func TestGuardRules(t *testing.T) {
	if lab.DeadlineFloor != DeadlineFloorSec*time.Second || lab.DeadlineFactor != DeadlineFactor {
		t.Errorf("the diagram's deadline is the larger of %d s and %dx; helpers/lab's is %v and %dx", DeadlineFloorSec, DeadlineFactor, lab.DeadlineFloor, lab.DeadlineFactor)
	}
	if d := lab.Deadline(0, 1); d != DeadlineFloorSec*time.Second {
		t.Errorf("deadline of an unknown time = %v, want the floor", d)
	}
	if d := lab.Deadline(1000, 1); d != DeadlineFactor*time.Second {
		t.Errorf("deadline of a 1 s step = %v, want %dx", d, DeadlineFactor)
	}
	dev := gpu.DeviceInfo{MaxThreadsPerBlock: MaxBlockThreads}
	cfg := func(n int) gpu.Config { return gpu.Config{Grid: gpu.D1(1), Block: gpu.D1(n)} }
	if err := gpu.CheckConfig(dev, gpu.KernelAttrs{}, cfg(MaxBlockThreads)); err != nil {
		t.Errorf("a block of %d threads refused: %v", MaxBlockThreads, err)
	}
	if err := gpu.CheckConfig(dev, gpu.KernelAttrs{}, cfg(2*MaxBlockThreads)); err == nil || !strings.Contains(err.Error(), strconv.Itoa(MaxBlockThreads)) {
		t.Errorf("a block of %d threads: %v, want an error naming the limit %d", 2*MaxBlockThreads, err, MaxBlockThreads)
	}
	if s := lab.SharedLimit(compile.Resources{SharedBytes: 400000}, gpu.DeviceInfo{}); !strings.Contains(s, "("+strconv.Itoa(StaticSharedKiB)+" KiB)") {
		t.Errorf("the static shared memory limit says %q, want %d KiB", s, StaticSharedKiB)
	}
}

// TestGuardsMatchNotebook checks the guards against notebook 09: its ten headings are Mistakes, in
// order; every mistake is caught by some guard; and each mistake's code cells call what its guards
// run (Try, gpu.CheckConfig, or Sanitize with the guard's tool).
func TestGuardsMatchNotebook(t *testing.T) {
	b, err := os.ReadFile("../../notebooks/09_mistakes.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Type   string   `json:"cell_type"`
			Source []string `json:"source"`
		}
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^## (\d+)\. (.+)$`)
	var names []string
	code := map[int]string{} // each mistake's code cells, joined
	for _, c := range nb.Cells {
		src := strings.Join(c.Source, "")
		if m := heading.FindStringSubmatch(src); c.Type == "markdown" && m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(names)+1 {
				t.Errorf("heading %q out of order", m[0])
			}
			names = append(names, strings.TrimSpace(m[2]))
			continue
		}
		if c.Type == "code" && len(names) > 0 {
			code[len(names)] += src
		}
	}
	if strings.Join(names, "\n") != strings.Join(Mistakes, "\n") {
		t.Errorf("notebook 09's mistakes are\n%s\nthe diagram's\n%s", strings.Join(names, "\n"), strings.Join(Mistakes, "\n"))
	}
	caught := map[int]bool{}
	for _, g := range Guards() {
		for _, k := range append(append([]int{}, g.Catches...), g.MayPass...) {
			if k < 1 || k > len(Mistakes) {
				t.Fatalf("guard %q names mistake %d", g.Stage, k)
			}
		}
		for _, k := range g.Catches {
			caught[k] = true
			ok := false
			for _, call := range strings.Split(g.Call, " ") {
				switch {
				case strings.HasPrefix(g.Call, "Sanitize"):
					tool := strings.TrimPrefix(g.Call, "Sanitize ")
					ok = strings.Contains(code[k], "Sanitize(env, ") && strings.Contains(code[k], ", "+tool+")")
				case call == "Try":
					ok = ok || strings.Contains(code[k], "Try(env, ")
				default:
					ok = ok || strings.Contains(code[k], "gpu."+call+"(")
				}
			}
			if !ok {
				t.Errorf("guard %q catches mistake %d (%s), but its cells do not call %s:\n%s", g.Stage, k, Mistakes[k-1], g.Call, code[k])
			}
		}
	}
	for k := 1; k <= len(Mistakes); k++ {
		if !caught[k] {
			t.Errorf("no guard catches mistake %d (%s)", k, Mistakes[k-1])
		}
	}
}

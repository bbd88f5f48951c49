package notebooks

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/lessons/matrix"
)

// Without a GPU, make record says the records are measured on one and what the no-GPU mode shows
// instead, before building or writing anything.
func TestRecordNeedsAGPU(t *testing.T) {
	if mode, err := exec.Command("bash", "../.ci/mode.sh").Output(); err != nil || strings.TrimSpace(string(mode)) != "nogpu" {
		t.Skipf("mode %q (%v): this machine has a GPU, so record.sh would record", mode, err)
	}
	out := filepath.Join(t.TempDir(), "rec")
	cmd := exec.Command("bash", "../.ci/record.sh", out)
	msg, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
		t.Fatalf("record.sh without a GPU: exit %d (%v), want 2\n%s", code, err, msg)
	}
	if !strings.Contains(string(msg), "no GPU here") || !strings.Contains(string(msg), "results/") {
		t.Errorf("record.sh without a GPU said %q; want it to say there is no GPU and that the no-GPU mode shows results/", msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("record.sh without a GPU made %s", out)
	}
}

// adopt.sh needs the folder record.sh wrote, and says so.
func TestAdoptNamesItsFolder(t *testing.T) {
	cmd := exec.Command("bash", "../.ci/adopt.sh", filepath.Join(t.TempDir(), "missing"))
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("adopt.sh with a missing folder succeeded:\n%s", msg)
	}
	if !strings.Contains(string(msg), "missing") {
		t.Errorf("adopt.sh with a missing folder said %q; want the folder named", msg)
	}
}

// make record's default tasks: KernelBench's three parts, every notebook once, the notebooks of
// one lesson (the same two digits) in one task so that they share its run, the sanitizer pass,
// lesson 08's SASS records, and the GPU matrix: every notebook under each of cmd/gpus's default
// profiles, a task per profile.
func TestRecordDefaultTasks(t *testing.T) {
	out, err := exec.Command("bash", "../.ci/record.sh", "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	tasks := strings.Fields(string(out))
	nbs, err := filepath.Glob("[0-9][0-9]*_*.ipynb")
	if err != nil || len(nbs) == 0 {
		t.Fatalf("notebooks: %v %v", nbs, err)
	}
	seen := map[string]int{}
	var kb, profiles []string
	sanitize, sass := false, false
	for _, task := range tasks {
		switch {
		case strings.HasPrefix(task, "nb:"):
			group := strings.Split(strings.TrimPrefix(task, "nb:"), "+")
			for _, nb := range group {
				seen[nb]++
				if nb[:2] != group[0][:2] {
					t.Errorf("task %s joins notebooks of two lessons", task)
				}
			}
		case strings.HasPrefix(task, "kb:"):
			kb = append(kb, strings.TrimPrefix(task, "kb:"))
		case task == "sanitize":
			sanitize = true
		case task == "sass:08_hopper":
			sass = true
		case strings.HasPrefix(task, "gpus:"):
			p, nbs, _ := strings.Cut(strings.TrimPrefix(task, "gpus:"), ":")
			profiles = append(profiles, p)
			if nbs != "" {
				t.Errorf("matrix task %s names notebooks; a default one runs every notebook", task)
			}
		default:
			t.Errorf("unexpected default task %q", task)
		}
	}
	for _, nb := range nbs {
		if seen[nb] != 1 {
			t.Errorf("%s is in %d default tasks, want 1", nb, seen[nb])
		}
	}
	if len(seen) != len(nbs) {
		t.Errorf("the tasks name %d notebooks, notebooks/ has %d", len(seen), len(nbs))
	}
	if strings.Join(kb, " ") != "1/3 2/3 3/3" || !sanitize || !sass {
		t.Errorf("KernelBench parts %v, the sanitizer %v, the SASS records %v: want the three parts, the pass and the records", kb, sanitize, sass)
	}
	if !slices.Equal(profiles, matrix.Defaults) {
		t.Errorf("the matrix tasks' profiles %v, want cmd/gpus's defaults %v", profiles, matrix.Defaults)
	}
	for _, task := range tasks {
		if strings.Contains(task, "04_softmax") && !strings.Contains(task, "04b_layernorm") {
			t.Errorf("%s: lesson 04's two notebooks must share a task (and the lesson's run)", task)
		}
	}
}

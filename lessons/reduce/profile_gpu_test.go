//go:build !nocuda

package reduce

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
)

// The cluster step profiled as the softmax notebook's Profile cell runs it (a process of its own,
// whose child runs under ncu): the step's launch at (4096, 65536), and the readings that cite it
// find their figures in it: x read from DRAM about once, and distributed shared memory traffic
// present and a small fraction of it. Skipped when ncu is not found, the driver keeps the counters
// for administrators, or this GPU cannot run the cluster step.
func TestClusterProfile(t *testing.T) {
	tool, err := nsight.FindTool()
	if err != nil {
		t.Skipf("profiling needs Nsight Compute: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "profile.json")
	ctx, cancel := context.WithTimeout(context.Background(), lab.ProfileLimit+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), profileEnv+"="+out)
	start := time.Now()
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the profile cell: %v\n%s", err, msg)
	}
	t.Logf("%s: one run under ncu in %s", tool, time.Since(start).Round(time.Second))
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the cell wrote nothing: %v\n%s", err, msg)
	}
	var failed struct{ Error string }
	if json.Unmarshal(b, &failed) == nil && failed.Error != "" {
		switch {
		case strings.Contains(failed.Error, "ERR_NVGPUCTRPERM"):
			t.Skipf("the GPU's counters are restricted here: %s", failed.Error)
		case strings.Contains(failed.Error, "compute capability"):
			t.Skipf("this GPU cannot run the cluster step: %s", failed.Error)
		}
		t.Fatalf("ProfileTrial: %s", failed.Error)
	}
	var f nsight.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Lesson != ID || len(f.Profiles) != 1 {
		t.Fatalf("lesson %s, %d profiles, want %s and 1 (the original)", f.Lesson, len(f.Profiles), ID)
	}
	p := f.Profiles[0]
	if p.Step != "the original "+stepCluster || p.Kernel.Name != "softmax_cluster" {
		t.Errorf("step %q kernel %q, want the original %s and softmax_cluster", p.Step, p.Kernel.Name, stepCluster)
	}
	if p.Note != "" {
		t.Logf("note: %s", p.Note)
	}
	figs := lab.Figures{Profiles: &f}
	for _, r := range ClusterProfileReadings() {
		v, ok := r.Value(figs)
		if !ok {
			t.Errorf("%q: not in the profile", r.What)
			continue
		}
		t.Logf("%s: %s", r.What, r.Format(v))
		if r.Holds != nil && !r.Holds(v) {
			t.Errorf("%q: %s, the claim (%s) does not hold", r.What, r.Format(v), r.Claim)
		}
	}
	if d, ok := p.Kernel.Value(metricDSMEM); !ok || d <= 0 {
		t.Errorf("distributed shared memory bytes %v (present %v): the cluster's blocks exchange their pairs through it", d, ok)
	}
	if len(p.Kernel.Stalls()) == 0 {
		t.Error("no warp stall reasons")
	}
}

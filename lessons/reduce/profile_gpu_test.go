//go:build !nocuda

package reduce

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// The cluster step profiled as the softmax notebook's Profile cell runs it (a process of its own,
// whose child runs under ncu): the step's launch at (4096, 65536), and the readings that cite it
// find their figures in it: x read from DRAM about once, and distributed shared memory traffic
// present and a small fraction of it. Skipped when ncu is not found, the driver keeps the counters
// for administrators, or this GPU cannot run the cluster step.
func TestClusterProfile(t *testing.T) {
	f := labtest.ProfileInChild(t, profileEnv)
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
	figs := lab.Figures{Profiles: f}
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

package reduce

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// log_softmax runs step 11 where the softmax op picks it (long rows on a GPU where its teams fit:
// KernelBench's rows of 393216 on an H100 or H200, and the GPU tests' rows just past
// ClusterMaxCols), step 9 everywhere else; both are LogSoftmaxSteps.
func TestPickLogSoftmax(t *testing.T) {
	for _, c := range []struct {
		profile    string
		rows, cols int
		want       SoftmaxStep
	}{{"h100-sxm", 4096, 393216, SoftmaxSteps[10]}, {"h200", 4096, 393216, SoftmaxSteps[10]}, {"h200", 8, ClusterMaxCols + 3, SoftmaxSteps[10]},
		{"h200", 6, 12289, SoftmaxSteps[9]}, {"h200", 4096, 1000, SoftmaxSteps[9]}, {"t4", 64, 524288, SoftmaxSteps[9]}} {
		in := softmaxIn(F32, c.rows, c.cols, true)
		in.Device = labtest.ProfileDevice(t, c.profile)
		got := PickLogSoftmax(in)
		if got.Name != c.want.Name {
			t.Errorf("%s (%d, %d): %s, want %s", c.profile, c.rows, c.cols, got.Name, c.want.Name)
		}
		if _, err := PlanSoftmax(got, in); err != nil {
			t.Errorf("%s (%d, %d): %s refuses: %v", c.profile, c.rows, c.cols, got.Name, err)
		}
	}
	if LogSoftmaxSteps[0].File != "s11_grid_ring.cu" || LogSoftmaxSteps[1].File != "s9_split_row.cu" {
		t.Errorf("LogSoftmaxSteps %s, %s", LogSoftmaxSteps[0].File, LogSoftmaxSteps[1].File)
	}
}

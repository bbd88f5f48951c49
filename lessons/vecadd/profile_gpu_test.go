//go:build !nocuda

package vecadd

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/nsight"
)

// A reader's float4 profiled from a Try-like call, as the notebook's cell runs it (a process of its
// own, whose children run under ncu): the original and the reader's copy side by side, each the
// lesson's launch at TableN with its DRAM throughput, and DRAM bytes read close to the two inputs
// (8 bytes per element: ncu flushes the caches before each replay). Skipped when ncu is not found
// or the driver keeps the counters for administrators.
func TestProfileFromTry(t *testing.T) {
	f := labtest.ProfileInChild(t, profileEnv)
	if f.Lesson != ID || len(f.Profiles) != 2 {
		t.Fatalf("lesson %s, %d profiles, want %s and 2 (the original, yours)", f.Lesson, len(f.Profiles), ID)
	}
	for i, step := range []string{"the original float4", "your float4"} {
		p := f.Profiles[i]
		if p.Step != step || p.Kernel.Name != "add_float4" {
			t.Errorf("profile %d: step %q kernel %q, want %q and add_float4", i, p.Step, p.Kernel.Name, step)
		}
		m, ok := sectionMetric(p.Kernel, "GPU Speed Of Light Throughput", "DRAM Throughput")
		if !ok || !m.OK || m.Value <= 0 || m.Value > 100 {
			t.Errorf("%s: DRAM throughput %+v (present %v), want a share of the peak", step, m, ok)
		}
		if read, ok := p.Kernel.Value("dram__bytes_read.sum"); !ok || read < 0.95*8*TableN || read > 1.25*8*TableN {
			t.Errorf("%s: DRAM bytes read %.4g (present %v), want about %d (a and b)", step, read, ok, 8*TableN)
		}
		if len(p.Kernel.Stalls()) == 0 {
			t.Errorf("%s: no warp stall reasons", step)
		}
		if p.Note != "" {
			t.Logf("%s: %s", step, p.Note)
		}
	}
	if !strings.Contains(f.Receipt.NCU, "Nsight Compute") || f.Receipt.GPU == "" {
		t.Errorf("receipt %+v", f.Receipt)
	}
	t.Log(nsight.Table(f).Text())
}

func sectionMetric(k nsight.Kernel, section, name string) (nsight.Metric, bool) {
	for _, m := range k.Metrics {
		if m.Section == section && m.Name == name {
			return m, true
		}
	}
	return nsight.Metric{}, false
}

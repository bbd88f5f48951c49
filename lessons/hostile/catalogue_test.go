package hostile

import (
	"slices"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/results"
)

// recordedDevice is the GPU of the recorded run (an H100), and the H200 (the same SMs and shared
// memory, a 60 MiB L2).
func recordedDevices(t *testing.T) []gpu.DeviceInfo {
	t.Helper()
	run, err := record.LoadFS(results.FS, "00_setup")
	if err != nil {
		t.Fatal(err)
	}
	h100 := run.Receipt.Device
	h200 := h100
	h200.Name, h200.L2Bytes, h200.MemBytes = "NVIDIA H200 (as the H100 with its 60 MiB L2)", 60<<20, 143771<<20
	return []gpu.DeviceInfo{h100, h200}
}

// TestShapesTakeEveryPath proves, without a GPU, that the catalogue's shapes take every path of
// every op on the H100 and the H200 by the ops' own dispatch rules (the recorded run then shows
// which step really ran).
func TestShapesTakeEveryPath(t *testing.T) {
	for _, dev := range recordedDevices(t) {
		for _, op := range Catalogue() {
			var steps []string
			for _, c := range Cases([]*Op{op}, nil, false, 1) {
				in := c.Op.Inputs(c.Shape, c.Dist, c.Seed)
				st := op.Predict(dev, c.Shape, in)
				if testing.Verbose() && (c.Dist.Name == "normal 1" || c.Dist.Name == "uniform 1e5") {
					t.Logf("%s %s %s %s: %s", dev.Name, op.Name, c.Shape, c.Dist.Name, st)
				}
				if !slices.Contains(steps, st) {
					steps = append(steps, st)
				}
			}
			for _, p := range op.Paths {
				if !slices.ContainsFunc(steps, func(s string) bool { return Exercises(s, p) }) {
					t.Errorf("%s on %s: no shape takes path %q (the shapes take %q)", op.Name, dev.Name, p, steps)
				}
			}
		}
	}
}

package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// driverErr is an error as gorgonia.org/cu writes a CUresult: its bare name.
type driverErr string

func (e driverErr) Error() string { return string(e) }

func TestFaultNamesTheLastLaunch(t *testing.T) {
	s := &Session{}
	mine := &Kernel{Name: "add_mine", Source: "your add.cu"}
	orig := &Kernel{Name: "add", Source: "0_naive.cu"}
	s.noteLaunch(orig, Config{Grid: D1(4), Block: D1(256)})
	if err := s.fault(nil); err != nil {
		t.Fatal(err)
	}
	s.synced()
	s.noteLaunch(mine, Config{Grid: D1(65536), Block: D1(256), SharedBytes: 128})
	err := fmt.Errorf("copying 256.0 MiB from the device: %w", s.fault(driverErr("IllegalAddress")))
	var fe *FaultError
	if !errors.As(err, &fe) {
		t.Fatalf("%v: not a *FaultError", err)
	}
	l, ok := fe.Suspect()
	if !ok || l.Kernel != "add_mine" || l.Config.Grid.X != 65536 {
		t.Fatalf("suspect %+v, want add_mine with grid 65536", l)
	}
	for _, want := range []string{"add_mine", "grid 65536", "block 256", "128 bytes", "illegal memory address", "IllegalAddress"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "0_naive.cu") {
		t.Errorf("%q names the launch that completed before the fault", err)
	}
	// Every later call fails with the same sticky error and keeps naming the first fault's kernel.
	s.synced()
	later := s.fault(driverErr("CUDA_ERROR_ILLEGAL_ADDRESS (700)"))
	if !errors.As(later, &fe) || fe.Launches[0].Kernel != "add_mine" {
		t.Errorf("a later error %v does not name the faulting kernel", later)
	}
}

func TestFaultKinds(t *testing.T) {
	for msg, want := range map[string]string{
		"IllegalAddress":                      "illegal memory address",
		"CUDA_ERROR_MISALIGNED_ADDRESS (716)": "misaligned address",
		"IllegalInstruction":                  "illegal instruction",
		"waiting for the GPU: LaunchFailed":   "failed launch",
		"CUDA_ERROR_ASSERT (710)":             "assert",
	} {
		kind, ok := FaultKind(errors.New(msg))
		if !ok || !strings.Contains(kind, want) {
			t.Errorf("FaultKind(%q) = %q, %v; want %q", msg, kind, ok, want)
		}
	}
	for _, msg := range []string{"OutOfMemory", "CUDA_ERROR_INVALID_VALUE (1)", "InvalidPtx"} {
		if kind, ok := FaultKind(errors.New(msg)); ok {
			t.Errorf("FaultKind(%q) = %q: not a kernel's fault", msg, kind)
		}
	}
	s := &Session{}
	if err := s.fault(driverErr("OutOfMemory")); errors.As(err, new(*FaultError)) {
		t.Errorf("out of memory became a fault: %v", err)
	}
}

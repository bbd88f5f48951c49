package gpu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/watchdog"
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

// waitChildEnv makes the test binary, run again by TestGuardWaitsEndsAHungWait, wait for ever on a
// fake GPU wait under a deadline.
const waitChildEnv = "GPU_TEST_HUNG_WAIT"

// children are what the test binary does when run again with childEnv naming one: a GPU test
// (fault_gpu_test.go) registers the ones that break their process's CUDA context on purpose.
var children = map[string]func(){}

const childEnv = "GPU_TEST_CHILD"

func TestMain(m *testing.M) {
	if f, ok := children[os.Getenv(childEnv)]; ok {
		f()
		os.Exit(0)
	}
	if os.Getenv(waitChildEnv) != "" {
		s := &Session{}
		s.noteLaunch(&Kernel{Name: "loop_forever", Source: "yours.cu"}, Config{Grid: D1(8), Block: D1(128)})
		s.GuardWaits(func(n int) time.Duration { return time.Duration(n) * 200 * time.Millisecond }, func(pending []LaunchInfo, waited, limit time.Duration) {
			fmt.Printf("waited %v of %v for %s\n", waited.Round(100*time.Millisecond), limit, pending[len(pending)-1].Kernel)
		})
		s.wait(func() error { time.Sleep(time.Hour); return nil }) // a kernel that never ends
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestGuardWaitsEndsAHungWait(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), waitChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != watchdog.ExitCode {
		t.Fatalf("exit %v, want status %d; output:\n%s", err, watchdog.ExitCode, out)
	}
	if want := "waited 200ms of 200ms for loop_forever"; !strings.Contains(string(out), want) {
		t.Errorf("output %q lacks %q", out, want)
	}
	// Unguarded, and after restore, a wait is just the call.
	s := &Session{}
	restore := s.GuardWaits(func(int) time.Duration { return time.Hour }, nil)
	restore()
	if s.waitLimit != nil {
		t.Error("restore left a wait limit")
	}
	if err := s.wait(func() error { return nil }); err != nil {
		t.Error(err)
	}
}

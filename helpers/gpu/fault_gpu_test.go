//go:build !nocuda

package gpu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

const faultSrc = `extern "C" __global__ void fine(float *x) { x[threadIdx.x] = 1.0f; }
extern "C" __global__ void null_write(float *x, long long far) {
	x[far + blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;  // far past every allocation
}
#ifndef NO_HUGE
extern "C" __global__ void huge_static(float *x) {
	__shared__ float tile[100000];  // 400,000 bytes: over the 48 KiB a block may declare
	tile[threadIdx.x] = x[threadIdx.x];
	__syncthreads();
	x[threadIdx.x] = tile[99999 - threadIdx.x];
}
#endif`

func init() {
	// A kernel that faults, in a child process (the fault breaks the process's context): the error
	// of the next synchronisation names it and its launch, not the fine kernel before it.
	children["fault"] = func() {
		s, err := Open()
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		res, err := compile.PTX(compile.Source{Name: "fault.cu", Code: faultSrc}, compile.Options{Arch: s.Device.Arch(), Defines: []string{"NO_HUGE"}})
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		mod, err := s.Load(res.PTX)
		if err != nil {
			fmt.Println("load:", err)
			os.Exit(2)
		}
		mod.Source = "fault.cu"
		fine, err1 := mod.Kernel("fine")
		bad, err2 := mod.Kernel("null_write")
		x, err3 := Alloc[float32](s, 1024)
		if err := errors.Join(err1, err2, err3); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		if err := fine.Launch(Config{Grid: D1(1), Block: D1(32)}, x); err != nil {
			fmt.Println("fine:", err)
			os.Exit(2)
		}
		if err := s.Synchronize(); err != nil {
			fmt.Println("fine sync:", err)
			os.Exit(2)
		}
		if err := bad.Launch(Config{Grid: D1(4), Block: D1(128)}, x, int64(1)<<40); err != nil {
			fmt.Println("launch:", err)
		}
		err = s.Synchronize()
		var fe *FaultError
		fmt.Printf("fault=%v\nerror: %v\n", errors.As(err, &fe), err)
		_, err = x.ToHost()
		fmt.Printf("later: %v\n", err)
	}
}

func TestFaultNamesTheKernelOnTheGPU(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=fault")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	for _, want := range []string{"fault=true", "kernel null_write (grid 4, block 128, 0 bytes of dynamic shared memory) from fault.cu faulted: an illegal memory address",
		"later: copying 4.0 KiB from the device: kernel null_write (grid 4"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q", want)
		}
	}
}

// The driver's JIT refuses static shared memory over 48 KiB; its own log comes back in the error.
func TestLoadShowsTheJITLog(t *testing.T) {
	s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := compile.PTX(compile.Source{Name: "fault.cu", Code: faultSrc}, compile.Options{Arch: s.Device.Arch()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Load(res.PTX)
	if err == nil || !strings.Contains(err.Error(), "the JIT's log") || !strings.Contains(err.Error(), "huge_static") {
		t.Errorf("loading 400,000 bytes of static shared memory: %v; want the JIT's log naming huge_static", err)
	}
}

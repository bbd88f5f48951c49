package lab

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/rerun"
)

func TestDeadline(t *testing.T) {
	if d := Deadline(0.06, 1); d != DeadlineFloor {
		t.Errorf("Deadline(0.06 ms, 1 launch) = %v, want the floor %v", d, DeadlineFloor)
	}
	if d := Deadline(0, 0); d != DeadlineFloor {
		t.Errorf("Deadline unknown = %v, want the floor %v", d, DeadlineFloor)
	}
	if d := Deadline(200, 2); d != 40*time.Second {
		t.Errorf("Deadline(200 ms, 2 launches) = %v, want 100 times 400 ms", d)
	}
}

func TestTimeoutMessageNamesTheKernelAndTheDeadline(t *testing.T) {
	pending := []gpu.LaunchInfo{{Kernel: "add", Source: "0_naive.cu", Config: gpu.Config{Grid: gpu.D1(65536), Block: gpu.D1(256)}}}
	msg := TimeoutMessage("naive", 10*time.Second, 0.062, pending)
	for _, want := range []string{"Your naive did not finish", "after 10s", "the larger of 10s and 100 times what the original naive takes for the 1 launch",
		"0.062 ms", "kernel add (grid 65536, block 256", "grid-stride loop whose stride is 0", "__syncthreads()", "the GPU is freed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("timeout message lacks %q:\n%s", want, msg)
		}
	}
}

func TestFaultMessageNamesTheLaunch(t *testing.T) {
	fe := &gpu.FaultError{Kind: "an illegal memory address", Err: errors.New("IllegalAddress"),
		Launches: []gpu.LaunchInfo{{Kernel: "add", Config: gpu.Config{Grid: gpu.D1(4096), Block: gpu.D1(256), SharedBytes: 0}}}}
	msg := FaultMessage("naive", fe, SanitizeHint)
	for _, want := range []string{"Your naive faulted", "illegal memory address in kernel add (grid 4096, block 256, 0 bytes",
		"IllegalAddress", "context is lost", "next cell starts with a fresh one", "replace Try with Sanitize"} {
		if !strings.Contains(msg, want) {
			t.Errorf("fault message lacks %q:\n%s", want, msg)
		}
	}
}

// The reader's static shared memory over 48 KiB is named with the limits before any load, in the
// no-GPU mode too: ptxas for the real architecture refuses it.
func TestTryNamesSharedMemoryOverTheLimit(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	big := `extern "C" __global__ void add(const float* a, float* c, int n) {
	__shared__ float tile[100000];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	tile[threadIdx.x] = a[i];
	__syncthreads();
	if (i < n) c[i] = tile[threadIdx.x];
}`
	trial := Trial{Step: "naive", Compile: func(code string) ([]record.KernelReport, error) {
		if code == "" {
			code = `extern "C" __global__ void add(const float* a, float* c, int n) {}`
		}
		p, err := env.Build(compile.Source{Name: "0_naive.cu", Code: code}, "add")
		if err != nil {
			return nil, err
		}
		return []record.KernelReport{p.Report("add", 256, 0)}, nil
	}, Measure: func(string) ([]record.Record, error) { return nil, nil }} // the GPU mode checks the original; nothing to check here
	err = env.Try(trial, big)
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("Try with 400000 bytes of static shared memory: %v, want a *LimitError", err)
	}
	for _, want := range []string{"kernel add cannot run", "400000 bytes (390.6 KiB) of static shared memory", "at most 49152 bytes (48 KiB)",
		"uses too much shared data"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	if d := env.Device(); d.MaxSharedPerBlockOptin > 0 && !strings.Contains(err.Error(), compile.KiB(d.MaxSharedPerBlockOptin)) {
		t.Errorf("message lacks the %s's opt-in maximum %d:\n%v", d.Name, d.MaxSharedPerBlockOptin, err)
	}
	// The original, and a reader's source that fits, build as before.
	if err := env.Try(trial, ""); err != nil {
		t.Errorf("the original: %v", err)
	}
}

func TestSanitizeReport(t *testing.T) {
	code := "extern \"C\" __global__ void add(const float* a, float* c, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    c[i + 1] = a[i];\n}\n"
	out := `========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at add+0x90 in 0_naive.cu:3
=========     by thread (255,0,0) in block (4095,0,0)
=========     Address 0x7f3a40000000 is out of bounds
=========
rerun-child: the check passed
========= ERROR SUMMARY: 1 error
`
	msg := SanitizeReport("your naive", "memcheck", code, rerun.Result{Output: out, Took: 2 * time.Second})
	for _, want := range []string{"memcheck found 1 report in your naive", "Invalid __global__ write of size 4 bytes in kernel add",
		"0_naive.cu line 3", "thread (255,0,0) of block (4095,0,0)", "   3 |     c[i + 1] = a[i];", "own result: the check passed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	clean := SanitizeReport("your naive", "memcheck", code, rerun.Result{Output: "========= ERROR SUMMARY: 0 errors\n"})
	if !strings.Contains(clean, "found nothing wrong") {
		t.Errorf("a clean run: %s", clean)
	}
	if none := SanitizeReport("your naive", "memcheck", code, rerun.Result{Output: "oops\n", Err: errors.New("exit status 1")}); !strings.Contains(none, "no summary") {
		t.Errorf("a run without a summary: %s", none)
	}
}

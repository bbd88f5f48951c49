package output

import (
	"strings"
	"testing"
)

// The shapes of compute-sanitizer's reports (memcheck, racecheck, synccheck), as CUDA 12 and 13
// print them for a kernel compiled with line information.
const sampleLog = `========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at add+0x90 in /tmp/0_naive.cu:7
=========     by thread (255,0,0) in block (65535,0,0)
=========     Address 0x7f3a40000000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a3c000000 of size 67108864 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2f5a6f] in libcuda.so.1
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuCtxSynchronize.
=========
========= Error: Race reported between Write access at add_shared+0x120 in 0_naive.cu:12
=========     and Read access at add_shared+0x160 in 0_naive.cu:14 [1024 hazards]
=========
========= Barrier error detected. Divergent thread(s) in warp
=========     at 0x2c0 in 0_naive.cu:9:sync_half
=========     by thread (32,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 3 errors
`

func TestFindings(t *testing.T) {
	f := Findings(sampleLog)
	if len(f) != 3 {
		t.Fatalf("%d findings, want 3: %+v", len(f), f)
	}
	w := f[0]
	if w.What != "Invalid __global__ write of size 4 bytes" || w.Kernel != "add" || w.Line != 7 || w.Thread != "(255,0,0)" || w.Block != "(65535,0,0)" {
		t.Errorf("memcheck finding %+v", w)
	}
	if len(w.Detail) != 2 || !strings.Contains(w.Detail[0], "out of bounds") {
		t.Errorf("memcheck details %q: want the address and the nearest allocation only", w.Detail)
	}
	if r := f[1]; r.Kernel != "add_shared" || r.Line != 12 || !strings.HasPrefix(r.What, "Race reported") {
		t.Errorf("racecheck finding %+v", r)
	}
	if s := f[2]; s.Kernel != "sync_half" || s.Line != 9 || s.Thread != "(32,0,0)" {
		t.Errorf("synccheck finding %+v", s)
	}
	code := "a\nb\nc\nd\ne\nf\n    c[i + 1] = a[i] + b[i];\n"
	got := w.Describe(code)
	for _, want := range []string{"kernel add", "0_naive.cu line 7", "thread (255,0,0) of block (65535,0,0)", "out of bounds", "   7 |     c[i + 1] = a[i] + b[i];"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, lacks %q", got, want)
		}
	}
	if errs, hazards, ok := Summary(sampleLog); !ok || errs != 3 || hazards != 0 {
		t.Errorf("Summary = %d errors, %d hazards, %v; want 3, 0, true", errs, hazards, ok)
	}
	race := "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n"
	if _, hazards, ok := Summary(race); !ok || hazards != 2 {
		t.Errorf("racecheck summary: %d hazards, %v", hazards, ok)
	}
}

package lab

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/show"
)

type fileStep struct{ name, file string }

var changeSteps = []fileStep{
	{"1 naive", "1_naive.cu"}, {"2 shared", "2_shared.cu"}, {"2 shared FP16", "2_shared.cu"}, {"3 tensor cores", "3_mma.cu"},
}

var changeFiles = compile.Files{Pkg: "kernels/test", FS: fstest.MapFS{
	"1_naive.cu":  {Data: []byte("// step 1\n__global__ void k(float* y, const float* x) {\n  int i = threadIdx.x;\n  y[i] = x[i];\n}\n")},
	"2_shared.cu": {Data: []byte("// step 1\n__global__ void k(float* y, const float* x) {\n  __shared__ float s[256];\n  int i = threadIdx.x;\n  s[i] = x[i];\n  __syncthreads();\n  y[i] = s[i];\n}\n")},
	"3_mma.cu":    {Data: []byte("#include <mma.h>\nusing namespace nvcuda;\n__global__ void mma(half* a, half* b, float* c) {\n  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;\n  wmma::load_matrix_sync(fa, a, 16);\n  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);\n}\n")},
}}

// shownChange is what Walk shows of step name, as plain text.
func shownChange(t *testing.T, name string) (Change, string) {
	t.Helper()
	c, err := ChangeOf("test", changeSteps, func(s fileStep) string { return s.name }, func(s fileStep) (compile.Source, error) { return changeFiles.Source(s.file) }, name)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	old := show.Out
	show.Out = &buf
	defer func() { show.Out = old }()
	c.Show()
	return c, buf.String()
}

func TestChangeShowsEachStepAgainstTheOneBefore(t *testing.T) {
	for _, tc := range []struct {
		step, kind, prev string
		want, not        []string
	}{
		{"1", "first", "", []string{"--- 1_naive.cu", "   4    y[i] = x[i];"}, []string{"What changed"}},
		{"2 shared", "diff", "1 naive", []string{"What changed from step 1 naive", "--- 1_naive.cu\n+++ 2_shared.cu\n", "+  __syncthreads();", "-  y[i] = x[i];", "--- 2_shared.cu\n   1  // step 1"}, nil},
		{"2 shared FP16", "same file", "2 shared", []string{"same kernel file as step 2 shared (2_shared.cu)", "   6    __syncthreads();"}, []string{"What changed"}},
		{"3", "new design", "2 shared FP16", []string{"keeps 0 of its 6 lines of code from step 2 shared FP16 (2_shared.cu)", "   1  #include <mma.h>"}, []string{"What changed"}},
	} {
		c, out := shownChange(t, tc.step)
		if c.Kind() != tc.kind || c.Prev != tc.prev {
			t.Errorf("step %s: kind %q against %q, want %q against %q", tc.step, c.Kind(), c.Prev, tc.kind, tc.prev)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("step %s shows no %q:\n%s", tc.step, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("step %s shows %q:\n%s", tc.step, w, out)
			}
		}
	}
	if _, err := ChangeOf("test", changeSteps, func(s fileStep) string { return s.name }, func(s fileStep) (compile.Source, error) { return changeFiles.Source(s.file) }, "9"); err == nil || !strings.Contains(err.Error(), `no step "9"`) {
		t.Errorf("an unknown step: %v", err)
	}
}

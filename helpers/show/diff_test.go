package show

import (
	"bytes"
	"strings"
	"testing"
)

const (
	naiveCU  = "__global__ void k(float* y, const float* x) {\n  int i = threadIdx.x;\n  y[i] = x[i];\n}\n"
	sharedCU = "__global__ void k(float* y, const float* x) {\n  __shared__ float s[256];\n  int i = threadIdx.x;\n  s[i] = x[i];\n  __syncthreads();\n  y[i] = s[i];\n}\n"
)

func TestDiffHTMLColoursAddedAndRemovedLines(t *testing.T) {
	h := DiffHTML("What changed from step 1", "1_naive.cu", "2_shared.cu", naiveCU, sharedCU)
	for _, want := range []string{
		"What changed from step 1", "+4</span>", "−1</span>", "@@ -1,4 +1,7 @@",
		diffStyle[2] + `"><span style="color:#999;user-select:none">        2 </span>+   __shared__ float s[256];`, // added: no old number, new number 2
		diffStyle[1] + `"><span style="color:#999;user-select:none">   3      </span>-   y[i] = x[i];`,             // removed: old number 3
	} {
		if !strings.Contains(h, want) {
			t.Errorf("diff HTML lacks %q:\n%s", want, h)
		}
	}
	if h := DiffHTML("t", "a", "b", "x < y\n", "x > y\n"); !strings.Contains(h, "x &lt; y") || strings.Contains(h, "x < y") {
		t.Errorf("source text is not escaped: %s", h)
	}
}

func TestDiffPlainText(t *testing.T) {
	var buf bytes.Buffer
	old := Out
	Out = &buf
	defer func() { Out = old }()
	Diff("What changed from step 1", "1_naive.cu", "2_shared.cu", naiveCU, sharedCU)
	want := `What changed from step 1
--- 1_naive.cu
+++ 2_shared.cu
@@ -1,4 +1,7 @@
 __global__ void k(float* y, const float* x) {
+  __shared__ float s[256];
   int i = threadIdx.x;
-  y[i] = x[i];
+  s[i] = x[i];
+  __syncthreads();
+  y[i] = s[i];
 }
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := DiffText("same", "a", "b", naiveCU, naiveCU); !strings.Contains(got, "no line differs") {
		t.Errorf("identical sources: %q", got)
	}
}

func TestSourceCollapsedIsClosed(t *testing.T) {
	var buf bytes.Buffer
	old := Out
	Out = &buf
	defer func() { Out = old }()
	SourceCollapsed("2_shared.cu", sharedCU)
	if !strings.Contains(buf.String(), "   2    __shared__ float s[256];") {
		t.Errorf("plain source lacks its numbered line:\n%s", buf.String())
	}
}

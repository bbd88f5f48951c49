package show

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/record"
)

func TestRecordsTable(t *testing.T) {
	recs := []record.Record{
		{Variant: "PyTorch", Kind: "baseline", MedianMS: 4.5, MinMS: 4.4, MaxMS: 4.7},
		{Variant: "v3", Kind: "kernel", MedianMS: 0.5, MinMS: 0.49, MaxMS: 0.52, Correct: true, RelL2: 1e-7, Tol: "fp32"},
		{Variant: "broken", Kind: "kernel", MedianMS: 0.1, RelL2: 1, Tol: "fp32"},
	}
	tab := Records("forward", recs, record.Receipt{}, "PyTorch")
	text := tab.Text()
	for _, want := range []string{"9.00x", "pass (rel L2 1.0e-07)", "FAIL", "500.0 µs", "baseline"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if h := tab.HTML(); !strings.Contains(h, "<th") || !strings.Contains(h, "9.00x") {
		t.Error("HTML table incomplete")
	}
	if md := tab.Markdown(); !strings.Contains(md, "| PyTorch |") {
		t.Errorf("markdown table incomplete:\n%s", md)
	}
}

func TestPlainOutputOutsideNotebook(t *testing.T) {
	var buf bytes.Buffer
	Out = &buf
	defer func() { Out = os.Stdout }()
	Source("k.cu", "line one\nline two\n")
	Note(Warning, "careful")
	out := buf.String()
	for _, want := range []string{"   2  line two", "WARNING: careful"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTargetsVerdicts(t *testing.T) {
	tt := NewTargets("Targets")
	tt.Add("a", "1 ms", true, true)
	tt.Add("b", "2 ms", false, true)
	tt.Add("c", "unavailable", true, false)
	want := [][]string{{"a", "1 ms", "yes"}, {"b", "2 ms", "no"}, {"c", "unavailable", "not measured"}}
	if len(tt.Rows) != len(want) {
		t.Fatalf("rows %v", tt.Rows)
	}
	for i, w := range want {
		if strings.Join(tt.Rows[i], "|") != strings.Join(w, "|") {
			t.Errorf("row %d = %v, want %v", i, tt.Rows[i], w)
		}
	}
}

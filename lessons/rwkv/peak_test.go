package rwkv

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/results"
)

// The recorded v8 (TF32 mma.sync) is a share of the H100's TF32 tensor peak, not 229% of its FP32
// peak: its forward table's cell names that peak and is under 100%, and float32 steps keep theirs.
func TestRecordedTensorStepAgainstTheTF32Peak(t *testing.T) {
	run, err := record.LoadFS(results.FS, ID)
	if err != nil {
		t.Skip("no recorded run:", err)
	}
	tab := ForwardTable(run)
	col := -1
	for i, h := range tab.Header {
		if strings.Contains(h, "peak") {
			col = i
		}
	}
	if col < 0 || tab.Header[col] != "% of peak" {
		t.Fatalf("no '%% of peak' column in %q", tab.Header)
	}
	found := 0
	for _, row := range tab.Rows {
		cell := row[col]
		pct, err := strconv.ParseFloat(cell[:max(0, strings.Index(cell, "%"))], 64)
		if err != nil {
			continue // an unavailable baseline
		}
		if pct > 100 {
			t.Errorf("%s: %s, over 100%%", row[0], cell)
		}
		switch row[0] {
		case "v8 tensor core mma", "v6 tensor core tf32":
			found++
			if !strings.HasSuffix(cell, "of TF32 tensor peak (datasheet)") {
				t.Errorf("%s: %q does not name the TF32 tensor peak", row[0], cell)
			}
		case "v7 tensor core 3xtf32":
			if !strings.Contains(cell, "of TF32 tensor peak (datasheet") || !strings.Contains(cell, "33%") {
				t.Errorf("%s: %q does not name the TF32 tensor peak and a split's ceiling", row[0], cell)
			}
		case "v4 balanced":
			if !strings.HasSuffix(cell, "% of FP32 peak") {
				t.Errorf("v4 stays a share of the FP32 peak: %q", cell)
			}
		}
	}
	if found != 2 {
		t.Errorf("v6 and v8 not both in the table: %d", found)
	}
	if !strings.Contains(tab.Caption, "TF32 494.7") {
		t.Errorf("the caption does not give the TF32 peak it is against: %s", tab.Caption)
	}
}

package sass

import (
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// testdata/float4_sm90_nvdisasm11.8.txt is real output: kernels/vecadd/3_float4.cu compiled by
// NVRTC 11.8 for sm_90 with -lineinfo, then `nvdisasm --print-line-info --print-code` (CUDA 11.8).
func TestParseRealListing(t *testing.T) {
	b, err := os.ReadFile("testdata/float4_sm90_nvdisasm11.8.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	kernels, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(kernels) != 1 || kernels[0].Name != "add_float4" {
		t.Fatalf("kernels %v, want one, add_float4", kernels)
	}
	k := kernels[0]
	// The parser against a plain count of the text's lines.
	want := map[string]int{}
	lines := 0
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "*/ ") || !strings.Contains(l, ";") {
			continue
		}
		lines++
		for _, op := range []string{" LDG.E.128 ", " STG.E.128 ", " LDG.E ", " STG.E "} {
			if strings.Contains(l, op) {
				want[strings.TrimSpace(op)]++
			}
		}
	}
	if len(k.Instructions) != lines {
		t.Errorf("%d instructions parsed, the text has %d instruction lines", len(k.Instructions), lines)
	}
	got := map[string]int{}
	src, err := kv.Source("3_float4.cu")
	if err != nil {
		t.Fatal(err)
	}
	srcLines := strings.Split(src.Code, "\n")
	for _, in := range k.Instructions {
		got[in.Op]++
		if in.Line < 1 || in.Line > len(srcLines) || !strings.HasSuffix(in.File, "3_float4.cu") {
			t.Errorf("instruction %04x %s: source %s line %d, not a line of 3_float4.cu", in.Offset, in.Op, in.File, in.Line)
			continue
		}
		// Every 16-byte global access comes from the float4 loop's body, which names a4/b4/c4.
		if (in.Op == "LDG.E.128" || in.Op == "STG.E.128") && !strings.Contains(srcLines[in.Line-1], "4[i]") {
			t.Errorf("%s at %04x is attributed to line %d %q, not to the float4 loop", in.Op, in.Offset, in.Line, srcLines[in.Line-1])
		}
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s: parsed %d, the text has %d", op, got[op], n)
		}
	}
	if want["LDG.E.128"] == 0 || want["LDG.E"] == 0 {
		t.Fatalf("the listing should have both 16-byte loads (float4 loop) and 4-byte loads (tail): %v", want)
	}
	if c := CountOf(k, "global loads, 128-bit"); c != want["LDG.E.128"] {
		t.Errorf("count of 128-bit global loads %d, want %d", c, want["LDG.E.128"])
	}
	if c := CountOf(k, "global loads, 8-32-bit"); c != want["LDG.E"] {
		t.Errorf("count of 32-bit global loads %d, want %d", c, want["LDG.E"])
	}
}

func TestParseEdgeCases(t *testing.T) {
	text := `	.section	.text.k,"ax",@progbits
k:
	//## File "a.cu", line 3 inlined at "a.cu", line 9
        /*0000*/              @!P0 LDS.U16 R1, [R2] ;
        /*0010*/              @!PT LDS RZ, [RZ] ;
        /*0020*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
	.section	.text.j,"ax",@progbits
        /*0000*/                   EXIT ;
`
	ks, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].Name != "k" || ks[1].Name != "j" || len(ks[0].Instructions) != 3 {
		t.Fatalf("parsed %+v", ks)
	}
	in := ks[0].Instructions[0]
	if in.Pred != "@!P0" || in.Op != "LDS.U16" || in.Args != "R1, [R2]" || in.Line != 3 || in.File != "a.cu" || in.Bits() != 16 {
		t.Errorf("first instruction %+v", in)
	}
	if ks[1].Instructions[0].Line != 0 {
		t.Errorf("a new section keeps the previous line: %+v", ks[1].Instructions[0])
	}
	counts, total := Counts(ks[0])
	if total != 2 {
		t.Errorf("total %d, want 2 (the @!PT padding never runs)", total)
	}
	for _, c := range counts {
		want := 0
		if c.Class.Name == "shared loads, 8-32-bit" || c.Class.Name == "block barriers" {
			want = 1
		}
		if c.N != want {
			t.Errorf("%s: %d, want %d", c.Class.Name, c.N, want)
		}
	}
	if _, err := Parse("no code here\n"); err == nil {
		t.Error("a text with no instruction parsed")
	}
}

// The steps' claims, checked in the machine code NVRTC and nvdisasm make here (no GPU): the naive
// vector add loads 4 bytes at a time and the float4 step 16; the warp-tiled matmul keeps its
// accumulators in registers (no local memory traffic).
func TestKnownSteps(t *testing.T) {
	lst := func(src compile.Source, err error) Kernel {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		l, err := Of(src, compile.Options{Arch: "sm_90"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Arch != "sm_90" || len(l.Kernels) == 0 {
			t.Fatalf("%s: listing for %s with %d kernels", src.Name, l.Arch, len(l.Kernels))
		}
		return l.Kernels[0]
	}
	naive := lst(kv.Source("1_naive.cu"))
	if Has(naive, "LDG.E.128") || CountOf(naive, "global loads, 128-bit") != 0 {
		t.Error("the naive vector add has a 128-bit global load")
	}
	if CountOf(naive, "global loads, 8-32-bit") == 0 || CountOf(naive, "global stores, 8-32-bit") == 0 {
		t.Error("the naive vector add has no 32-bit global load or store")
	}
	f4 := lst(kv.Source("3_float4.cu"))
	if CountOf(f4, "global loads, 128-bit") == 0 || CountOf(f4, "global stores, 128-bit") == 0 {
		t.Error("the float4 step has no 128-bit global load or store")
	}
	mm := lst(km.Source("7_warptile.cu"))
	if n, m := CountOf(mm, "local loads (spills)"), CountOf(mm, "local stores (spills)"); n+m != 0 {
		t.Errorf("matmul step 7 spills: %d local loads, %d local stores", n, m)
	}
	if CountOf(mm, "FP32 fused multiply-adds") == 0 {
		t.Error("matmul step 7 has no FFMA")
	}
}

func TestCountTableAndText(t *testing.T) {
	src, err := kv.Source("3_float4.cu")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Of(src, compile.Options{Arch: "compute_90"})
	if err != nil {
		t.Fatal(err)
	}
	tab := CountTable(l)
	if len(tab.Header) != 3 || tab.Header[2] != "add_float4" {
		t.Errorf("header %v", tab.Header)
	}
	found := false
	for _, r := range tab.Rows {
		if r[0] == "global loads, 128-bit" && r[2] != "0" {
			found = true
		}
		if r[0] == "tensor core wgmma (Hopper)" {
			t.Errorf("a class no kernel holds and that is not always shown is a row: %v", r)
		}
	}
	if !found {
		t.Errorf("no nonzero 128-bit load row in %v", tab.Rows)
	}
	if !strings.Contains(tab.Caption, "sm_90") || !strings.Contains(tab.Caption, "nvdisasm") {
		t.Errorf("caption %q does not say the architecture and the tool", tab.Caption)
	}
	text := l.Text()
	if !strings.Contains(text, "LDG.E.128") {
		t.Errorf("listing lacks the 128-bit loads:\n%.600s", text)
	}
	// NVRTC 12 and newer keep the source lines; before 12 the listing is made without them and its
	// caption says why (compile.CompileCubin).
	if l.LineInfo != strings.Contains(text, "// line 14: float4 x = a4[i], y = b4[i];") {
		t.Errorf("line information %v, but the listing quotes the source line: %v:\n%.600s", l.LineInfo, !l.LineInfo, text)
	}
	if !l.LineInfo && !strings.Contains(tab.Caption, "Without source lines") {
		t.Errorf("a listing without source lines does not say why: %q", tab.Caption)
	}
}

func TestToolFoundAndItsRelease(t *testing.T) {
	if _, err := Tool(); err != nil {
		t.Fatalf("setup installs nvdisasm (bash .ci/setup.sh): %v", err)
	}
	if v := releaseOf("Cuda compilation tools, release 13.0, V13.0.88"); v != "13.0" {
		t.Errorf("release %q", v)
	}
}

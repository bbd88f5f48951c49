package giou

import (
	"math"
	"strings"
	"testing"
)

// The generator draws the article's workload: counts floor(|N(0,3)|) in [0, 255], well-formed
// targets (x2 >= x1 + 1 inside the 256 x 256 image), zero padding, and it is seeded.
func TestGenerate(t *testing.T) {
	bt := Generate(ArticleShape, 1)
	if err := bt.Validate(); err != nil {
		t.Fatal(err)
	}
	again := Generate(ArticleShape, 1)
	if again.Pred[123] != bt.Pred[123] || again.Counts[77] != bt.Counts[77] {
		t.Error("the same seed drew a different batch")
	}
	mean := float64(bt.Total()) / float64(bt.B)
	// E floor(|N(0, 3)|) = about 1.9
	if mean < 1.6 || mean > 2.2 {
		t.Errorf("mean count %.2f, want about 1.9", mean)
	}
	zero := 0
	for b, c := range bt.Counts {
		if c < 0 || c > 255 {
			t.Fatalf("count %d", c)
		}
		if c == 0 {
			zero++
		}
		for j := 0; j < bt.M; j++ {
			tb := bt.Target[(b*bt.M+j)*4:][:4]
			if j >= int(c) {
				if tb[0] != 0 || tb[1] != 0 || tb[2] != 0 || tb[3] != 0 {
					t.Fatalf("padded target slot %d of image %d is not zero", j, b)
				}
				continue
			}
			if tb[2] < tb[0]+1 || tb[3] < tb[1]+1 || tb[2] > 255 || tb[0] < 0 {
				t.Fatalf("target %v", tb)
			}
		}
	}
	if m := bt.Misses(); m < bt.Total()/10 || m > bt.Total()/3 {
		t.Errorf("%d of %d predictions miss their target, want about one in six", m, bt.Total())
	}
	if zero == 0 {
		t.Error("no empty image in 1024: the workload has about a quarter empty")
	}
	r := bt.Ragged()
	if len(r) != bt.B || len(r[5]) != 4*int(bt.Counts[5]) {
		t.Error("ragged view has the wrong lengths")
	}
	pb, err := FromRagged(bt.Pred, r, bt.M)
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := bt.Reference()
	l2, _ := pb.Reference()
	if l1 != l2 || l1 <= 0 || l1 >= 2 {
		t.Errorf("padded from ragged: loss %v vs %v (want in (0, 2))", l2, l1)
	}
}

// Bad batches are refused with the image, the box and the limit named.
func TestValidate(t *testing.T) {
	bt := Generate(Shape{B: 4, M: 3}, 2)
	bt.Counts[0], bt.Counts[1] = 1, 0
	copy(bt.Target[0:4], []float32{5, 5, 4, 9})
	if err := bt.Validate(); err == nil || !strings.Contains(err.Error(), "inverted") {
		t.Errorf("inverted target: %v", err)
	}
	bt.Target[2] = 6
	bt.Counts[1] = 4
	if err := bt.Validate(); err == nil || !strings.Contains(err.Error(), "outside [0, M = 3]") {
		t.Errorf("count over M: %v", err)
	}
	if _, err := FromRagged(make([]float32, 8), [][]float32{{0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}}, 2); err == nil {
		t.Error("more boxes than M accepted")
	}
	if err := (Shape{B: -1, M: 3}).Validate(); err == nil {
		t.Error("negative B accepted")
	}
}

// GIoU's known values: identical boxes 1 (gradient 0), disjoint boxes below 0, a box inside another
// the area ratio, and the degenerate cases stay finite.
func TestGIoUValuesAndConventions(t *testing.T) {
	g, d := GIoU([4]float64{1, 2, 5, 7}, [4]float64{1, 2, 5, 7})
	if g != 1 || d != [4]float64{} {
		t.Errorf("identical: %v %v", g, d)
	}
	g, _ = GIoU([4]float64{0, 0, 1, 1}, [4]float64{2, 0, 3, 1})
	if math.Abs(g-(0-(3-2)/3.0)) > 1e-15 {
		t.Errorf("disjoint: %v, want -1/3", g)
	}
	g, _ = GIoU([4]float64{1, 1, 2, 2}, [4]float64{0, 0, 4, 4})
	if math.Abs(g-1.0/16) > 1e-15 {
		t.Errorf("inside: %v, want 1/16", g)
	}
	for _, c := range [][2][4]float64{
		{{3, 3, 3, 3}, {3, 3, 3, 3}},     // zero-area identical
		{{3, 3, 3, 8}, {1, 1, 5, 5}},     // zero width
		{{5, 5, 1, 1}, {1, 1, 5, 5}},     // inverted pred
		{{5, 1, 1, 5}, {0, 0, 2, 2}},     // inverted in x only
		{{0, 0, 0, 0}, {10, 10, 10, 10}}, // two points
	} {
		g, d := GIoU(c[0], c[1])
		if math.IsNaN(g) || math.IsInf(g, 0) || g > 1 {
			t.Errorf("%v: GIoU %v", c, g)
		}
		for _, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%v: gradient %v", c, d)
			}
		}
	}
	// every image empty: loss 0, gradient 0
	s := Shape{B: 3, M: 2}
	grad := make([]float64, 4*s.Slots())
	for i := range grad {
		grad[i] = math.NaN()
	}
	if l := Loss(s, make([]float64, 24), make([]float64, 24), []int32{0, 0, 0}, grad); l != 0 {
		t.Errorf("all empty: loss %v", l)
	}
	for _, v := range grad {
		if v != 0 {
			t.Fatalf("all empty: gradient %v", grad)
		}
	}
}

// The float64 reference gradient against central differences, every element (padded slots too).
func TestReferenceGradCheck(t *testing.T) {
	for i, s := range append(GradCheckShapes, Shape{B: 4, M: 3}) {
		res, err := GradCheckCPU(s, uint64(10+i))
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Errorf("%v: %v: %v", s, res, res.Err())
		}
		if res.Checked != 4*s.Slots() {
			t.Errorf("%v: checked %d elements, want %d", s, res.Checked, 4*s.Slots())
		}
	}
}

// A wrong gradient fails the check: the check can fail.
func TestGradCheckCatchesAWrongGradient(t *testing.T) {
	bt := GradBatch(Shape{B: 3, M: 4}, 3)
	_, grad := bt.Reference()
	bad := append([]float64(nil), grad...)
	for i := range bad {
		if bad[i] != 0 {
			bad[i] *= 1.01
			break
		}
	}
	if CompareGrad(bad, grad, bt).OK {
		t.Error("a gradient 1% off in one element passed")
	}
	if !CompareGrad(grad, grad, bt).OK {
		t.Error("the reference does not pass against itself")
	}
}

// giouGrad32 is 5_fused.cu's giou_grad in float32 (without fused multiply-adds): dGIoU/dpred.
func giouGrad32(p, t [4]float32) (d [4]float32) {
	const eps = float32(Eps)
	aw, ah := p[2]-p[0], p[3]-p[1]
	a1, a2 := aw*ah, (t[2]-t[0])*(t[3]-t[1])
	lx, ly, rx, ry := p[0] >= t[0], p[1] >= t[1], p[2] <= t[2], p[3] <= t[3]
	pick := func(c bool, a, b float32) float32 {
		if c {
			return a
		}
		return b
	}
	iw0, ih0 := pick(rx, p[2], t[2])-pick(lx, p[0], t[0]), pick(ry, p[3], t[3])-pick(ly, p[1], t[1])
	iw, ih := max(iw0, 0), max(ih0, 0)
	inter := iw * ih
	uni := a1 + a2 - inter
	uc := max(uni, eps)
	ex1, ey1, ex2, ey2 := p[0] <= t[0], p[1] <= t[1], p[2] >= t[2], p[3] >= t[3]
	ew0, eh0 := pick(ex2, p[2], t[2])-pick(ex1, p[0], t[0]), pick(ey2, p[3], t[3])-pick(ey1, p[1], t[1])
	ew, eh := max(ew0, 0), max(eh0, 0)
	enc := ew * eh
	ec := max(enc, eps)
	dU := 1 / ec
	if uni > eps {
		dU = -inter/(uc*uc) + 1/ec
	}
	dI := 1/uc - dU
	dE := -(1 / ec)
	if enc > eps {
		dE = -(1/ec - (enc-uni)/(ec*ec))
	}
	giw, gih, gew, geh := pick(iw0 > 0, dI*ih, 0), pick(ih0 > 0, dI*iw, 0), pick(ew0 > 0, dE*eh, 0), pick(eh0 > 0, dE*ew, 0)
	d[0] = -ah*dU - pick(lx, giw, 0) - pick(ex1, gew, 0)
	d[2] = ah*dU + pick(rx, giw, 0) + pick(ex2, gew, 0)
	d[1] = -aw*dU - pick(ly, gih, 0) - pick(ey1, geh, 0)
	d[3] = aw*dU + pick(ry, gih, 0) + pick(ey2, geh, 0)
	return d
}

// Boxes far apart (issue 23): the gradient's terms cancel to about 1e-6, and a correct float32
// kernel (modelled by giouGrad32) is a few 1e-5 off in relative L2, over FP32's fixed 1e-5.
// GradTolerance's floor, derived from each box's terms, passes it; a zero or sign-flipped gradient
// fails it, here and on the article's workload.
func TestGradToleranceFarApart(t *testing.T) {
	far := FarApart()
	for _, bt := range []*Batch{far, Generate(Shape{B: 8, M: 32}, 12)} {
		pred, target := widen(bt.Pred), widen(bt.Target)
		want := make([]float64, len(pred))
		Loss(bt.Shape, pred, target, bt.Counts, want)
		got := make([]float64, len(want))
		inv := 1 / float32(max(bt.Total(), 1))
		for b, c := range bt.Counts {
			for j := 0; j < int(c); j++ {
				o := (b*bt.M + j) * 4
				d := giouGrad32([4]float32(bt.Pred[o:o+4]), [4]float32(bt.Target[o:o+4]))
				for k := range 4 {
					got[o+k] = float64(-inv * d[k])
				}
			}
		}
		tol := GradTolerance(bt)
		r := CompareGrad(got, want, bt)
		t.Logf("%s: %v", tol.Name, r)
		if !r.OK {
			t.Errorf("a float32 gradient failed: %v", r.Err())
		}
		if bt == far && r.RelL2 <= GradTol.RelL2 {
			t.Errorf("far apart: rel L2 %.3g is within the fixed bound: the case no longer shows the fixed bound failing", r.RelL2)
		}
		flip := make([]float64, len(want))
		for i := range want {
			flip[i] = -want[i]
		}
		for name, g := range map[string][]float64{"zeros": make([]float64, len(want)), "sign flipped": flip} {
			if r := CompareGrad(g, want, bt); r.OK {
				t.Errorf("%s passed: %v", name, r)
			}
		}
	}
}

// giou32 is 3_block_mean.cu's giou in float32, with (scaled) or without (as before issue 23) its
// frame_scale.
func giou32(p, t [4]float32, scaled bool) float32 {
	aw, ah, tw, th := p[2]-p[0], p[3]-p[1], t[2]-t[0], t[3]-t[1]
	iw := max(min(p[2], t[2])-max(p[0], t[0]), 0)
	ih := max(min(p[3], t[3])-max(p[1], t[1]), 0)
	ew := max(max(p[2], t[2])-min(p[0], t[0]), 0)
	eh := max(max(p[3], t[3])-min(p[1], t[1]), 0)
	s, eps := float32(1), float32(Eps)
	m := max(abs32(aw), abs32(ah), abs32(tw), abs32(th), ew, eh)
	if scaled && m > 65536 && !math.IsInf(float64(m), 0) {
		_, e := math.Frexp(float64(m))
		s = float32(math.Ldexp(1, 16-e))
		eps = max(float32(Eps)*s*s, 1e-38)
	}
	aw, ah, tw, th, iw, ih, ew, eh = aw*s, ah*s, tw*s, th*s, iw*s, ih*s, ew*s, eh*s
	inter, enc := iw*ih, ew*eh
	uni := aw*ah + tw*th - inter
	return inter/max(uni, eps) - (enc-uni)/max(enc, eps)
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

// Huge but finite predictions (issue 23): the float64 reference is finite; the kernels' float32
// GIoU unscaled is NaN (Inf / Inf), scaled by a power of two it is finite and matches the reference;
// on ordinary boxes the scaling changes no bit.
func TestHugeBoxesScaledFrame(t *testing.T) {
	bt, err := HugeBoxes()
	if err != nil {
		t.Fatal(err)
	}
	pred, target := widen(bt.Pred), widen(bt.Target)
	grad := make([]float64, len(pred))
	if l := Loss(bt.Shape, pred, target, bt.Counts, grad); math.IsNaN(l) || math.IsInf(l, 0) {
		t.Fatalf("the float64 loss is %v", l)
	}
	for i, g := range grad {
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.Fatalf("the float64 gradient is %v at %d", g, i)
		}
	}
	nanBefore := 0
	for b, c := range bt.Counts {
		for j := 0; j < int(c); j++ {
			o := (b*bt.M + j) * 4
			p, q := [4]float32(bt.Pred[o:o+4]), [4]float32(bt.Target[o:o+4])
			want, _ := GIoU([4]float64(pred[o:o+4]), [4]float64(target[o:o+4]))
			got, old := giou32(p, q, true), giou32(p, q, false)
			if math.IsNaN(float64(old)) {
				nanBefore++
			}
			if math.Abs(float64(got)-want) > 1e-5+1e-4*math.Abs(want) {
				t.Errorf("box %v against %v: scaled %v, want %v (unscaled %v)", p, q, got, want, old)
			}
		}
	}
	if nanBefore == 0 {
		t.Error("no box gave NaN unscaled: the batch no longer shows the overflow")
	}
	ord := Generate(Shape{B: 32, M: 8}, 5)
	for i := 0; i < ord.Slots(); i++ {
		p, q := [4]float32(ord.Pred[4*i:4*i+4]), [4]float32(ord.Target[4*i:4*i+4])
		if a, b := giou32(p, q, true), giou32(p, q, false); a != b && !(math.IsNaN(float64(a)) && math.IsNaN(float64(b))) {
			t.Fatalf("ordinary box %v: scaled %v, unscaled %v", p, a, b)
		}
	}
}

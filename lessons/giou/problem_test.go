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
	if CompareGrad(bad, grad, bt.Total()).OK {
		t.Error("a gradient 1% off in one element passed")
	}
	if !CompareGrad(grad, grad, bt.Total()).OK {
		t.Error("the reference does not pass against itself")
	}
}

package giou

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ID names the lesson's results and notebook.
const ID = "06_giou"

// Eps is the article's clamp of the union and of the enclosing area.
const Eps = 1e-5

// Shape is a padded batch's size: B images, room for M boxes each.
type Shape struct{ B, M int }

// ArticleShape is the article's workload: 1024 images, up to 256 boxes each.
var ArticleShape = Shape{B: 1024, M: 256}

// String prints the shape the way the tables do.
func (s Shape) String() string { return fmt.Sprintf("B=%d M=%d", s.B, s.M) }

// Slots is B*M, the padded box slots.
func (s Shape) Slots() int { return s.B * s.M }

// Validate refuses shapes no step can take, before any launch. B = 0 or M = 0 is valid (an empty
// batch: the loss is 0 and nothing is launched).
func (s Shape) Validate() error {
	if s.B < 0 || s.M < 0 {
		return fmt.Errorf("giou: %v: B and M must not be negative", s)
	}
	if s.B > math.MaxInt32 || s.M > math.MaxInt32 {
		return fmt.Errorf("giou: %v: B and M are passed as 32-bit ints, at most %d", s, math.MaxInt32)
	}
	if float64(s.B)*float64(s.M) > 1<<34 {
		return fmt.Errorf("giou: %v: %.3g box slots, over the limit of 2^34", s, float64(s.B)*float64(s.M))
	}
	return nil
}

// Batch is a padded batch: pred and Target are (B, M, 4) boxes (x1, y1, x2, y2), row-major float32;
// image b's valid boxes are its first Counts[b] slots. Target slots past the count are zero (the
// article's padding); pred slots past it hold whatever the model wrote (the loss ignores them).
type Batch struct {
	Shape
	Pred, Target []float32
	Counts       []int32
}

// Total is the number of valid boxes.
func (bt *Batch) Total() int {
	n := 0
	for _, c := range bt.Counts {
		n += int(c)
	}
	return n
}

// Ragged is the batch as the article's per-sample list: image b's valid target boxes, 4 floats each.
func (bt *Batch) Ragged() [][]float32 {
	out := make([][]float32, bt.B)
	for b := range out {
		o := b * bt.M * 4
		out[b] = bt.Target[o : o+4*int(bt.Counts[b])]
	}
	return out
}

// FromRagged pads a per-sample list of target boxes (4 floats each) into a batch of M slots per
// image, with pred (B, M, 4) given. It refuses, naming the image and box, a list whose length is not
// a multiple of 4, more than M boxes, or a target box with x2 < x1 or y2 < y1 (see Validate).
func FromRagged(pred []float32, targets [][]float32, m int) (*Batch, error) {
	bt := &Batch{Shape: Shape{B: len(targets), M: m}, Pred: pred, Counts: make([]int32, len(targets))}
	if err := bt.Shape.Validate(); err != nil {
		return nil, err
	}
	if len(pred) != bt.Slots()*4 {
		return nil, fmt.Errorf("giou: pred has %d floats, want B*M*4 = %d", len(pred), bt.Slots()*4)
	}
	bt.Target = make([]float32, bt.Slots()*4)
	for b, t := range targets {
		if len(t)%4 != 0 {
			return nil, fmt.Errorf("giou: image %d's targets have %d floats, not a multiple of 4", b, len(t))
		}
		if len(t)/4 > m {
			return nil, fmt.Errorf("giou: image %d has %d target boxes, more than the batch's M = %d slots", b, len(t)/4, m)
		}
		bt.Counts[b] = int32(len(t) / 4)
		copy(bt.Target[b*m*4:], t)
	}
	return bt, bt.Validate()
}

// Validate checks what the kernels rely on, before any launch: the buffers' lengths, every count in
// [0, M], and every valid TARGET box well-formed (x2 >= x1, y2 >= y1, finite; a zero-area box is
// allowed). Predicted boxes are not checked: a model may output anything while it trains, and our
// steps' loss stays finite for every finite box, however large (see Conventions).
func (bt *Batch) Validate() error {
	if err := bt.Shape.Validate(); err != nil {
		return err
	}
	if len(bt.Pred) != bt.Slots()*4 || len(bt.Target) != bt.Slots()*4 || len(bt.Counts) != bt.B {
		return fmt.Errorf("giou: %v needs pred and target of %d floats and %d counts; got %d, %d and %d", bt.Shape, bt.Slots()*4, bt.B,
			len(bt.Pred), len(bt.Target), len(bt.Counts))
	}
	for b, c := range bt.Counts {
		if c < 0 || int(c) > bt.M {
			return fmt.Errorf("giou: image %d has count %d, outside [0, M = %d]", b, c, bt.M)
		}
		for j := 0; j < int(c); j++ {
			t := bt.Target[(b*bt.M+j)*4:]
			for k := 0; k < 4; k++ {
				if math.IsNaN(float64(t[k])) || math.IsInf(float64(t[k]), 0) {
					return fmt.Errorf("giou: target box %d of image %d has a non-finite coordinate %v", j, b, t[:4])
				}
			}
			if t[2] < t[0] || t[3] < t[1] {
				return fmt.Errorf("giou: target box %d of image %d is inverted (x1, y1, x2, y2) = %v: a target needs x2 >= x1 and y2 >= y1", j, b, t[:4])
			}
		}
	}
	return nil
}

// Conventions are the lesson's rules for degenerate input, as the references, kernels and tests keep them.
var Conventions = [][2]string{
	{"zero-area box (x2 = x1 or y2 = y1)", "allowed: the clamps max(U, 1e-5) and max(E, 1e-5) keep GIoU finite (0 against itself, negative against a box it misses)"},
	{"identical boxes", "GIoU = 1, loss term 0; gradient 0 (on a tie of a min or max the predicted box takes the gradient)"},
	{"predicted box with x2 < x1 (inverted)", "computed as given, finite: the intersection and enclosure widths clamp at 0, the area is the signed product (the article's and torchvision's formula)"},
	{"target box with x2 < x1, or a NaN/Inf target", "refused before any launch (Batch.Validate names the image and box)"},
	{"image with 0 boxes", "contributes nothing; its pred slots get a zero gradient"},
	{"every image empty (or B = 0)", "loss 0 and gradient 0 (the article's max(count, 1)); B = 0 launches nothing"},
	{"NaN or Inf in a valid predicted box", "not refused (it would cost a pass): NaN propagates to the loss, as in PyTorch"},
	{"NaN or Inf in a padded (invalid) predicted slot", "ignored by steps 3-6 and the op, which never read a slot past the count; the article's step 1 reads every slot and multiplies its GIoU by the mask, and NaN x 0 is NaN: its loss turns NaN (step 2 skips padding and survives)"},
	{"huge but finite coordinates (a box at 1e20: area 1e40, over float32's 3.4e38)", "steps 3-6 and the op compute a pair whose largest side passes 2^16 in a frame scaled by a power of two: the loss and gradient stay finite and accurate for |x| < 1.7e38 (where a box's width is finite); not refused, since a model may output such a box while it trains and one bad box must not end the run. The article's steps overflow there (Inf / Inf: NaN)"},
}

// Generate draws the article's workload for shape s: counts floor(|N(0, 3)|) clipped to [0, min(255, M)],
// target boxes in a 256 x 256 image (top-left uniform in [0, 254), size uniform in [1, 256),
// bottom-right clamped to 255, so x2 >= x1 + 1), and predictions that jitter each target (centre
// moved by N(0, 0.6 w) and N(0, 0.6 h), size scaled by exp(N(0, 0.3))): most overlap their target,
// about one in six misses it (a model early in training), some cover it. Pred
// slots past the count hold random boxes (what a model writes there), target slots zeros.
func Generate(s Shape, seed uint64) *Batch {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	bt := &Batch{Shape: s, Pred: make([]float32, s.Slots()*4), Target: make([]float32, s.Slots()*4), Counts: make([]int32, s.B)}
	const size = 256.0
	box := func() [4]float64 {
		x, y := r.Float64()*(size-2), r.Float64()*(size-2)
		w, h := 1+r.Float64()*(size-1), 1+r.Float64()*(size-1)
		return [4]float64{x, y, math.Min(x+w, size-1), math.Min(y+h, size-1)}
	}
	for b := 0; b < s.B; b++ {
		n := int(math.Floor(math.Abs(r.NormFloat64() * 3)))
		n = min(n, 255, s.M)
		bt.Counts[b] = int32(n)
		for j := 0; j < s.M; j++ {
			o := (b*s.M + j) * 4
			if j >= n {
				p := box()
				for k := range 4 {
					bt.Pred[o+k] = float32(p[k])
				}
				continue
			}
			t := box()
			for k := range 4 {
				bt.Target[o+k] = float32(t[k])
			}
			w, h := t[2]-t[0], t[3]-t[1]
			cx, cy := (t[0]+t[2])/2+r.NormFloat64()*w*Jitter, (t[1]+t[3])/2+r.NormFloat64()*h*Jitter
			pw, ph := w*math.Exp(r.NormFloat64()*0.3), h*math.Exp(r.NormFloat64()*0.3)
			p := [4]float64{cx - pw/2, cy - ph/2, cx + pw/2, cy + ph/2}
			for k := range 4 {
				bt.Pred[o+k] = float32(p[k])
			}
		}
	}
	return bt
}

// FarApart is a batch of 8 images of up to 32 boxes whose every prediction lies 6e4 right of and
// 6e4 below its target (within half precision's range, for step 4): the GIoU gradient's terms (about 1e-3) cancel to about 1e-6.
func FarApart() *Batch {
	bt := Generate(Shape{B: 8, M: 32}, 11)
	for i := 0; i < bt.Slots(); i++ {
		for k := 0; k < 4; k += 2 {
			bt.Pred[4*i+k] += 6e4
			bt.Pred[4*i+k+1] += 6e4
		}
	}
	return bt
}

// HugeBoxes is a batch of 16 images of up to 8 boxes whose first six valid predictions are huge
// but finite (at 1e20, inverted, of zero area, near float32's limit, long and thin): their areas
// overflow float32.
func HugeBoxes() (*Batch, error) {
	bt := Generate(Shape{B: 16, M: 8}, 24)
	huge := [][4]float32{
		{1e20, 2e20, 3e20, 5e20},     // far away and huge
		{-1e20, -1e20, 1e20, 1e20},   // covering its target
		{3e20, 1, -2e20, 7},          // inverted
		{1e20, 1e20, 1e20 + 1, 1e20}, // zero area, far away
		{-3e37, -3e37, 3e37, 3e37},   // near float32's limit
		{0, 0, 1e20, 1e-20},          // long and thin
	}
	n := 0
	for b, c := range bt.Counts {
		for j := 0; j < int(c) && n < len(huge); j++ {
			copy(bt.Pred[(b*bt.M+j)*4:], huge[n][:])
			n++
		}
	}
	if n < len(huge) {
		return nil, fmt.Errorf("giou: only %d valid boxes to place %d huge predictions", n, len(huge))
	}
	return bt, nil
}

// Jitter is the standard deviation of a prediction's centre around its target's, in box sizes.
const Jitter = 0.6

// Misses counts the valid boxes whose prediction does not overlap its target (intersection 0).
func (bt *Batch) Misses() int {
	n := 0
	for b := 0; b < bt.B; b++ {
		for j := 0; j < int(bt.Counts[b]); j++ {
			o := (b*bt.M + j) * 4
			p, t := bt.Pred[o:o+4], bt.Target[o:o+4]
			if min(p[2], t[2]) <= max(p[0], t[0]) || min(p[3], t[3]) <= max(p[1], t[1]) {
				n++
			}
		}
	}
	return n
}

// GIoU returns GIoU(p, t) in float64 and its gradient with respect to p (the lesson's subgradient
// conventions: a clamp at 0 or at Eps passes nothing; on a tie of a min or max the predicted box
// takes the gradient).
func GIoU(p, t [4]float64) (float64, [4]float64) {
	aw, ah := p[2]-p[0], p[3]-p[1]
	a1, a2 := aw*ah, (t[2]-t[0])*(t[3]-t[1])
	lx, ly, rx, ry := p[0] >= t[0], p[1] >= t[1], p[2] <= t[2], p[3] <= t[3]
	iw0 := pick(rx, p[2], t[2]) - pick(lx, p[0], t[0])
	ih0 := pick(ry, p[3], t[3]) - pick(ly, p[1], t[1])
	iw, ih := math.Max(iw0, 0), math.Max(ih0, 0)
	inter := iw * ih
	uni := a1 + a2 - inter
	uc := math.Max(uni, Eps)
	ex1, ey1, ex2, ey2 := p[0] <= t[0], p[1] <= t[1], p[2] >= t[2], p[3] >= t[3]
	ew0 := pick(ex2, p[2], t[2]) - pick(ex1, p[0], t[0])
	eh0 := pick(ey2, p[3], t[3]) - pick(ey1, p[1], t[1])
	ew, eh := math.Max(ew0, 0), math.Max(eh0, 0)
	enc := ew * eh
	ec := math.Max(enc, Eps)
	g := inter/uc - (enc-uni)/ec

	dU := 1 / ec
	if uni > Eps {
		dU -= inter / (uc * uc)
	}
	dI := 1/uc - dU
	dE := -1 / ec
	if enc > Eps {
		dE += (enc - uni) / (ec * ec)
	}
	var giw, gih, gew, geh float64
	if iw0 > 0 {
		giw = dI * ih
	}
	if ih0 > 0 {
		gih = dI * iw
	}
	if ew0 > 0 {
		gew = dE * eh
	}
	if eh0 > 0 {
		geh = dE * ew
	}
	d := [4]float64{
		-ah*dU - pick(lx, giw, 0) - pick(ex1, gew, 0),
		-aw*dU - pick(ly, gih, 0) - pick(ey1, geh, 0),
		ah*dU + pick(rx, giw, 0) + pick(ex2, gew, 0),
		aw*dU + pick(ry, gih, 0) + pick(ey2, geh, 0),
	}
	return g, d
}

func pick(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

// Loss is the float64 reference: the loss of the batch given pred and target as float64 (B, M, 4)
// arrays and the counts, and (when grad is not nil, len B*M*4) dL/dpred, zero on padded slots.
func Loss(s Shape, pred, target []float64, counts []int32, grad []float64) float64 {
	var sum float64
	total := 0
	for b := 0; b < s.B; b++ {
		for j := 0; j < s.M; j++ {
			if j < int(counts[b]) {
				total++
			}
		}
	}
	inv := 1 / math.Max(float64(total), 1)
	for b := 0; b < s.B; b++ {
		for j := 0; j < s.M; j++ {
			o := (b*s.M + j) * 4
			if j >= int(counts[b]) {
				if grad != nil {
					clear(grad[o : o+4])
				}
				continue
			}
			g, d := GIoU([4]float64(pred[o:o+4]), [4]float64(target[o:o+4]))
			sum += 1 - g
			if grad != nil {
				for k := range 4 {
					grad[o+k] = -inv * d[k]
				}
			}
		}
	}
	return sum * inv
}

// Terms is the per-slot loss term 1 - GIoU in float64 (0 on padded slots): what exercise 1 writes.
func Terms(s Shape, pred, target []float64, counts []int32) []float64 {
	out := make([]float64, s.Slots())
	for b := 0; b < s.B; b++ {
		for j := 0; j < int(counts[b]); j++ {
			o := (b*s.M + j) * 4
			g, _ := GIoU([4]float64(pred[o:o+4]), [4]float64(target[o:o+4]))
			out[b*s.M+j] = 1 - g
		}
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// Reference is the batch's float64 loss and gradient, from its float32 values.
func (bt *Batch) Reference() (float64, []float64) {
	grad := make([]float64, len(bt.Pred))
	return Loss(bt.Shape, widen(bt.Pred), widen(bt.Target), bt.Counts, grad), grad
}

package autograd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// GradCheckOptions set the finite-difference step and the tolerance of GradCheck. An element
// passes when |numeric - analytic| <= Atol + Rtol*|numeric|.
type GradCheckOptions struct {
	// Eps is the step h of the central difference (L(x+h) - L(x-h)) / 2h.
	Eps float64
	// Atol and Rtol are the absolute and relative tolerance.
	Atol, Rtol float64
	// MaxPerInput checks at most this many elements of each input, picked at random with Seed
	// (0: every element). Each checked element costs two evaluations of the loss.
	MaxPerInput int
	Seed        uint64
	// Why states the reason for the bounds, for reports.
	Why string
}

// Float64Check is torch.autograd.gradcheck's default for float64 functions.
var Float64Check = GradCheckOptions{Eps: 1e-6, Atol: 1e-5, Rtol: 1e-3,
	Why: "float64: truncation error O(h^2) ~ 1e-12 and rounding ~ 1e-16/h ~ 1e-10, far inside the bounds"}

// Float32Check is for a loss computed through float32 kernels: a larger step, so that float32
// rounding of the outputs (about 6e-8 relative, divided by 2h) stays near 1e-5 relative, and a
// bound of 1e-2 that a wrong gradient (typically off by O(1)) cannot meet.
var Float32Check = GradCheckOptions{Eps: 1e-2, Atol: 1e-2, Rtol: 1e-2,
	Why: "float32 forward: rounding 6e-8 * |L'| terms / 2h plus truncation O(h^2) stays well under 1e-2"}

// GradEntry is one checked element.
type GradEntry struct {
	Input    string  `json:"input"`
	Index    int     `json:"index"`
	Numeric  float64 `json:"numeric"`
	Analytic float64 `json:"analytic"`
	AbsErr   float64 `json:"abs_err"`
	OK       bool    `json:"ok"`
}

// GradCheckResult is the outcome of GradCheck.
type GradCheckResult struct {
	Checked   int              `json:"checked"`
	Failed    int              `json:"failed"`
	MaxAbsErr float64          `json:"max_abs_err"`
	MaxRelErr float64          `json:"max_rel_err"` // |num-ana| / max(|num|, Atol)
	Worst     []GradEntry      `json:"worst"`       // up to 5 entries with the largest error
	Opts      GradCheckOptions `json:"options"`
	OK        bool             `json:"ok"`
}

// Err is nil when every checked element passed and otherwise names the worst one.
func (r GradCheckResult) Err() error {
	if r.OK {
		return nil
	}
	if len(r.Worst) == 0 {
		return fmt.Errorf("gradcheck: nothing was checked")
	}
	w := r.Worst[0]
	return fmt.Errorf("gradcheck: %d of %d elements differ; worst %s[%d]: numeric %.6g, analytic %.6g (|diff| %.3g > %.1e + %.1e*|numeric|)",
		r.Failed, r.Checked, w.Input, w.Index, w.Numeric, w.Analytic, w.AbsErr, r.Opts.Atol, r.Opts.Rtol)
}

// String summarises the check in one line.
func (r GradCheckResult) String() string {
	v := "PASS"
	if !r.OK {
		v = "FAIL"
	}
	return fmt.Sprintf("%s  gradcheck of %d elements: max |numeric-analytic| %.2e, max relative %.2e (h=%.0e, atol %.0e, rtol %.0e)",
		v, r.Checked, r.MaxAbsErr, r.MaxRelErr, r.Opts.Eps, r.Opts.Atol, r.Opts.Rtol)
}

// LossFunc builds a scalar loss from inputs on the tape tp. GradCheck calls it many times with
// fresh copies of the inputs; it must be deterministic.
type LossFunc func(tp *Tape, inputs []*Tensor) (*Tensor, error)

// GradCheck compares the analytic gradient of loss (one Backward through the tape) with central
// finite differences, for every input that has RequiresGrad set. Inputs must have host values;
// they are copied for every evaluation and never modified. Device buffers made during the
// evaluations are freed.
func GradCheck(loss LossFunc, inputs []*Tensor, opts GradCheckOptions) (GradCheckResult, error) {
	res := GradCheckResult{Opts: opts}
	if opts.Eps <= 0 {
		return res, fmt.Errorf("gradcheck: step %g must be positive", opts.Eps)
	}
	base := make([][]float64, len(inputs))
	for i, in := range inputs {
		v, err := in.Values()
		if err != nil {
			return res, fmt.Errorf("gradcheck: input %d: %w", i, err)
		}
		base[i] = v
	}
	// eval runs the loss on copies of the inputs, with element e of input i moved by delta.
	eval := func(i, e int, delta float64, backward bool) (float64, [][]float64, error) {
		tp := NewTape()
		ins := make([]*Tensor, len(inputs))
		for j, in := range inputs {
			v := append([]float64(nil), base[j]...)
			if j == i {
				v[e] += delta
			}
			ins[j] = &Tensor{Name: in.Name, Shape: in.Shape, RequiresGrad: in.RequiresGrad, host: v}
		}
		defer func() {
			tp.Free()
			for _, t := range ins {
				t.Free()
				t.Grad.Free()
			}
		}()
		l, err := loss(tp, ins)
		if err != nil {
			return 0, nil, err
		}
		lv, err := l.Values()
		if err != nil {
			return 0, nil, err
		}
		if len(lv) != 1 {
			return 0, nil, fmt.Errorf("gradcheck: the loss has %d elements, want a scalar", len(lv))
		}
		if !backward {
			return lv[0], nil, nil
		}
		if err := tp.Backward(l); err != nil {
			return 0, nil, err
		}
		grads := make([][]float64, len(ins))
		for j, t := range ins {
			if !t.RequiresGrad {
				continue
			}
			if t.Grad == nil {
				grads[j] = make([]float64, len(base[j]))
				continue
			}
			g, err := t.Grad.Values()
			if err != nil {
				return 0, nil, fmt.Errorf("gradcheck: gradient of %s: %w", t.Name, err)
			}
			grads[j] = append([]float64(nil), g...)
		}
		return lv[0], grads, nil
	}
	_, analytic, err := eval(-1, 0, 0, true)
	if err != nil {
		return res, fmt.Errorf("gradcheck: analytic pass: %w", err)
	}
	var all []GradEntry
	for i, in := range inputs {
		if !in.RequiresGrad {
			continue
		}
		idx := pick(len(base[i]), opts.MaxPerInput, opts.Seed+uint64(i))
		for _, e := range idx {
			lp, _, err := eval(i, e, opts.Eps, false)
			if err != nil {
				return res, fmt.Errorf("gradcheck: %s[%d]+h: %w", in.Name, e, err)
			}
			lm, _, err := eval(i, e, -opts.Eps, false)
			if err != nil {
				return res, fmt.Errorf("gradcheck: %s[%d]-h: %w", in.Name, e, err)
			}
			num := (lp - lm) / (2 * opts.Eps)
			ana := analytic[i][e]
			d := math.Abs(num - ana)
			ent := GradEntry{Input: in.Name, Index: e, Numeric: num, Analytic: ana, AbsErr: d,
				OK: d <= opts.Atol+opts.Rtol*math.Abs(num)}
			if math.IsNaN(d) {
				ent.OK = false
				d = math.Inf(1)
				ent.AbsErr = d
			}
			res.Checked++
			if !ent.OK {
				res.Failed++
			}
			res.MaxAbsErr = math.Max(res.MaxAbsErr, d)
			res.MaxRelErr = math.Max(res.MaxRelErr, d/math.Max(math.Abs(num), opts.Atol))
			all = append(all, ent)
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].AbsErr > all[b].AbsErr })
	res.Worst = all[:min(5, len(all))]
	res.OK = res.Checked > 0 && res.Failed == 0
	return res, nil
}

// pick returns n distinct indices of [0, total) at random (all of them when n is 0 or >= total).
func pick(total, n int, seed uint64) []int {
	if n <= 0 || n >= total {
		out := make([]int, total)
		for i := range out {
			out[i] = i
		}
		return out
	}
	r := rand.New(rand.NewPCG(seed, 0x6a7d))
	return r.Perm(total)[:n]
}

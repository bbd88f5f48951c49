package rwkv

import (
	"fmt"
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// poke is one non-finite value put into one input of the op: w (C,T), k or g (B,C,T), at row
// (channel for w, b*C + c for k and g) and time step pos.
type poke struct {
	input string  // "w", "k" or "g"
	v     float32 // +inf, -inf or NaN
	row   int
	pos   int
}

func (p poke) String() string { return fmt.Sprintf("%s[%d][%d] = %v", p.input, p.row, p.pos, p.v) }

// nonFiniteShapes are the shapes of the non-finite checks: T = 13 and 129 are padded by the tiled
// steps (to 16 or 128), T = 256 is not; B and C are odd, and B = 17 gives the register-tile
// backward a second block of rows (and its reduce).
var nonFiniteShapes = []Shape{{B: 3, C: 5, T: 13}, {B: 3, C: 5, T: 129}, {B: 3, C: 5, T: 256}, {B: 17, C: 2, T: 129}}

// pokes are the cases for shape s: each of +inf, -inf and NaN in w, in k and in g, at the first
// step, a step inside the sequence and the last step, in a middle channel (and batch row).
func pokes(s Shape) []poke {
	nan := float32(math.NaN())
	pinf, ninf := float32(math.Inf(1)), float32(math.Inf(-1))
	c, b := s.C/2, s.B/2
	var out []poke
	for _, in := range []string{"w", "k", "g"} {
		row := b*s.C + c
		if in == "w" {
			row = c
		}
		for _, pos := range []int{0, s.T/2 + 1, s.T - 1} {
			for _, v := range []float32{pinf, ninf, nan} {
				out = append(out, poke{input: in, v: v, row: row, pos: pos})
			}
		}
	}
	return out
}

// pokedInputs draws w, k and g for s (seed) and puts p's value in its input.
func pokedInputs(s Shape, seed uint64, p poke) (w, k, g []float32) {
	w, k = Inputs(s, seed)
	g = Upstream(s, seed)
	map[string][]float32{"w": w, "k": k, "g": g}[p.input][p.row*s.T+p.pos] = p.v
	return w, k, g
}

// compareNonFinite checks got against the float64 reference want element by element: NaN where
// want is NaN, the same infinity where want is infinite, and finite where want is finite, all of
// those within tol (check.Compare).
func compareNonFinite(name string, got, want []float64, tol check.Tolerance) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		switch {
		case math.IsNaN(w) && !math.IsNaN(g), math.IsInf(w, 0) && g != w, isFinite(w) && !isFinite(g):
			return fmt.Errorf("%s[%d] = %v, want %v (the float64 reference)", name, i, g, w)
		}
	}
	if r := check.Compare(got, want, tol); !r.OK {
		return fmt.Errorf("%s: %v", name, r.Err())
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// The float64 reference is causal on non-finite inputs, as PyTorch computing the op's formula is: a
// value in w at j reaches out[t] only for t >= T-1-j and dk[u] only for u <= j; a value in k at p
// reaches out[t] for t >= p and dw[j] for j >= p; a value in g at p reaches dk[u] for u <= p and
// dw[j] for j >= T-1-p. Only the poked row (or channel) is touched, and a poked NaN gives NaN, an
// infinity the same infinity (the other inputs are positive).
func TestReferenceNonFiniteIsCausal(t *testing.T) {
	for _, s := range nonFiniteShapes {
		for i, p := range pokes(s) {
			w, k, g := pokedInputs(s, uint64(70+i), p)
			out, dk, dw := Forward(s, w, k, Eps), BackwardDK(s, w, g), BackwardDW(s, k, g)
			c := p.row % s.C
			T := s.T
			// hit reports whether element (row, t) of a (rows, T) result meets the poked value.
			type hitFunc func(row, t int) bool
			sameRow := func(row int) bool { return row == p.row }
			sameChan := func(row int) bool { return row%s.C == c }
			var fwdHit, dkHit, dwHit hitFunc
			switch p.input {
			case "w":
				fwdHit = func(row, t int) bool { return sameChan(row) && t >= T-1-p.pos }
				dkHit = func(row, u int) bool { return sameChan(row) && u <= p.pos }
				dwHit = func(int, int) bool { return false }
			case "k":
				fwdHit = func(row, t int) bool { return sameRow(row) && t >= p.pos }
				dkHit = func(int, int) bool { return false }
				dwHit = func(ch, j int) bool { return ch == c && j >= p.pos }
			case "g":
				fwdHit = func(int, int) bool { return false }
				dkHit = func(row, u int) bool { return sameRow(row) && u <= p.pos }
				dwHit = func(ch, j int) bool { return ch == c && j >= T-1-p.pos }
			}
			for _, res := range []struct {
				name string
				v    []float64
				hit  hitFunc
			}{{"out", out, fwdHit}, {"dk", dk, dkHit}, {"dw", dw, dwHit}} {
				for idx, v := range res.v {
					row, tt := idx/T, idx%T
					want := float64(p.v)
					switch {
					case !res.hit(row, tt) && !isFinite(v):
						t.Fatalf("%v, %s: %s[%d][%d] = %v, want finite (the value cannot reach it)", s, p, res.name, row, tt, v)
					case res.hit(row, tt) && math.IsNaN(want) && !math.IsNaN(v):
						t.Fatalf("%v, %s: %s[%d][%d] = %v, want NaN", s, p, res.name, row, tt, v)
					case res.hit(row, tt) && !math.IsNaN(want) && v != want:
						t.Fatalf("%v, %s: %s[%d][%d] = %v, want %v", s, p, res.name, row, tt, v, want)
					}
				}
			}
		}
	}
}

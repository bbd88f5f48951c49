package kernelbench

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

func selectOne(t *testing.T, all []kb.Problem, id string) kb.Problem {
	t.Helper()
	ps, err := kb.Select(all, id)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// The family's float64 references on a trial's slices equal the formula written out element by
// element from the whole tensors: C[i][j] = sum_k A(i, k) B(k, j), with A and B read through their
// stored layout, then the level-2 epilogue.
func TestMatMulFamilyReferences(t *testing.T) {
	for _, id := range []string{"L1-3", "L1-4", "L1-6", "L1-9", "L1-16", "L1-17", "L1-18", "L2-12", "L2-63", "L2-76"} {
		p := selectOne(t, kb.SmallProblems(), id)
		tensors := kb.DrawTrial(p, kb.DrawParams(p), 1)
		idx := []int{0, p.Batch() - 1}
		n := len(idx)
		got, err := Reference(p, kb.SliceInputs(p, tensors, idx), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n*p.OutPer() {
			t.Fatalf("%s: %d outputs for %d slices of %d", id, len(got), n, p.OutPer())
		}
		_, M, K, N := p.Dims()
		tA, tB, batched, _, _ := kb.MatMulFamily(p.Op)
		a, b := tensors[0], tensors[1]
		at := func(e, i, k int) float64 { // A(i, k) of batch entry e
			if tA {
				return float64(a[k*M+i])
			}
			return float64(a[e*M*K+i*K+k])
		}
		bt := func(e, k, j int) float64 {
			if tB {
				return float64(b[j*K+k])
			}
			return float64(b[e*K*N+k*N+j])
		}
		for si, sl := range idx {
			for _, pos := range [][2]int{{0, 0}, {M - 1, N - 1}, {M / 2, N / 3}} {
				e, i, j := 0, sl, pos[1]
				if batched {
					e, i = sl, pos[0]
				} else if pos[0] != 0 {
					continue // one row a slice: its first, middle and last columns
				}
				for _, jj := range []int{j, N - 1, N / 2} {
					var want float64
					for k := 0; k < K; k++ {
						want += at(e, i, k) * bt(e, k, jj)
					}
					if _, ok := kb.EpilogueMode(p.Op); ok {
						want = p.Epilogue(want, float64(tensors[2][jj]))
					}
					o := si*p.OutPer() + jj
					if batched {
						o = si*p.OutPer() + i*N + jj
					}
					if math.Abs(got[o]-want) > 1e-12*math.Max(1, math.Abs(want)) {
						t.Errorf("%s slice %d, element (%d, %d): %g, want %g", id, sl, i, jj, got[o], want)
					}
				}
			}
		}
	}
}

// Which kernels run each problem of the family at KernelBench's shape on an H100 and an H200
// (132 SMs each), decided by the plans with no GPU: the split (with slices of K for problem 6's
// four tiles), gemv.cu for the matrix-vector product; and where the split cannot run, lesson 03's
// any-shape step with slices of K for problem 6.
func TestMatMulFamilyPlans(t *testing.T) {
	for _, key := range []string{"h100-sxm", "h200"} {
		prof, err := gpu.LookupProfile(key)
		if err != nil {
			t.Fatal(err)
		}
		d := prof.Device()
		b := backend{}
		ps := kb.Problems()
		for _, id := range []string{"L1-3", "L1-6", "L1-16", "L1-17", "L1-18", "L2-12", "L2-63", "L2-76"} {
			p := selectOne(t, ps, id)
			if pl := mmPlanOf(p); !b.familySplit(p, pl, d) || pl.gemv() {
				t.Errorf("%s on %s: %+v does not run the split", id, key, pl)
			}
		}
		for _, id := range []string{"L1-7", "L1-8", "L1-9"} { // the plain products run as problems 1 and 2 do
			p := selectOne(t, ps, id)
			if pl := mmPlanOf(p); !hopperSplit(p, d) || fewTiles(pl.s, 1, d) || pl.gemv() {
				t.Errorf("%s on %s: not lesson 08's split through openMatMul", id, key)
			}
		}
		l4 := selectOne(t, ps, "L1-4")
		if pl := mmPlanOf(l4); !pl.gemv() {
			t.Errorf("L1-4: %+v is not a matrix-vector product", pl)
		}
		l6 := selectOne(t, ps, "L1-6")
		pl := mmPlanOf(l6)
		if n := hopper.Split.Slices(pl.s, d); !fewTiles(pl.s, 1, d) || n != 33 {
			t.Errorf("L1-6 on %s: the split on 2 super-tiles in %d slices of K, want 33 (66 clusters)", key, n)
		}
		if got, want := b.familyMemory(l6, d), matmul.DeviceBytes(pl.s, true)+33*256*256*4; got != want {
			t.Errorf("L1-6 scratch %d bytes, want %d (its 33 slices' workspace included)", got, want)
		}
		st := familyStep(l6, pl, d) // where the split cannot run
		cfg, err := st.Plan(pl.s, d)
		if err != nil || st.Name != matmul.AnyShape.Name+" 64x128, 49 slices" || cfg.Grid.Z != 49 || cfg.Grid.X*cfg.Grid.Y*cfg.Grid.Z != 392 || cfg.Block.X != 128 {
			t.Errorf("L1-6 on %s: %s, grid %v, %v", key, st.Name, cfg.Grid, err)
		}
		// memory on the device: the tensors, one product's A, B, C and the split's halves
		l3 := selectOne(t, ps, "L1-3")
		if got, want := b.familyMemory(l3, d), matmul.DeviceBytes(matmul.Shape{M: 512, N: 2048, K: 1024}, true); got != want {
			t.Errorf("L1-3 scratch %d bytes, want %d", got, want)
		}
		if got := b.familyMemory(l4, d); got != 0 {
			t.Errorf("L1-4 scratch %d bytes", got)
		}
	}
	// a problem whose inputs could leave fp16's range never runs the split
	p := selectOne(t, kb.Problems(), "L1-17")
	p.Tensors[0].Dist = kb.Randn
	if splitSafe(p) {
		t.Error("torch.randn inputs were called safe for the fp16 split")
	}
	if hopper.SplitMinMACs > 64*64*65536 {
		t.Errorf("small L1-6 (64 x 64 x 65536) is under the split's threshold %d: its plan is not the full shape's", hopper.SplitMinMACs)
	}
}

// split_transposed.cu writes the halves lesson 08's product reads: the same low-half factor as
// 5_split.cu.
func TestSplitTransposedMatchesLesson08(t *testing.T) {
	src, err := hopper.Split.Source("")
	if err != nil {
		t.Fatal(err)
	}
	if kb.SplitLoScale != hopper.SplitLoScale || !strings.Contains(src.Code, "#define LO_SCALE 2048.0f") ||
		!strings.Contains(kb.SplitTransposed().Code, "#define KB_LO_SCALE 2048.0f") {
		t.Errorf("the low halves' factors differ: %d and %d, or a file's define changed", kb.SplitLoScale, hopper.SplitLoScale)
	}
}

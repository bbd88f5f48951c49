package rwkv

import (
	"strings"
	"testing"
)

// The dispatch picks the first step in speed order whose plan takes the shape, and the general
// steps take what every other step refuses.
func TestDispatchChoice(t *testing.T) {
	dp, err := DispatchFor(FP32)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s        Shape
		fwd, bwd string
	}{
		{ArticleShape, "v4 balanced", "bwd v4 register tile"},
		{Shape{3, 5, 37}, "v5 register tile", "bwd v4 register tile"},
		{Shape{1, 1, 1}, "v5 register tile", "bwd v4 register tile"},
		{Shape{12, 64, 1100}, "v5 register tile", "bwd general"},
		{Shape{2, 4, 3000}, "general", "bwd general"},
	} {
		got, err := dp.Choose(c.s, h100)
		if err != nil {
			t.Fatalf("%v: %v", c.s, err)
		}
		if got.Fwd.Name != c.fwd || got.Bwd.Name != c.bwd {
			t.Errorf("%v: chose %s / %s, want %s / %s", c.s, got.Fwd.Name, got.Bwd.Name, c.fwd, c.bwd)
		}
		if c.fwd == "general" {
			for _, st := range dp.Forward[:len(dp.Forward)-1] {
				if st.Validate(c.s, h100) == nil {
					t.Errorf("%v: %s takes it, so it is not a shape every fast step refuses", c.s, st.Name)
				}
			}
			if len(got.FwdSkip) != len(dp.Forward)-1 {
				t.Errorf("%v: %d refusals recorded for %d faster steps", c.s, len(got.FwdSkip), len(dp.Forward)-1)
			}
		}
	}
	if _, err := dp.Choose(Shape{0, 1, 1}, h100); err == nil {
		t.Error("an empty shape was given a step")
	}
	tf, err := DispatchFor(TF32)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tf.Choose(ArticleShape, h100); err != nil || got.Fwd.Name != "v8 tensor core mma" {
		t.Errorf("tf32 dispatch at the article's shape: %v, %v", got.Fwd.Name, err)
	}
	if _, err := DispatchFor("fp8"); err == nil {
		t.Error("an unknown precision was accepted")
	}
	tab := DispatchTable(dp, h100, DispatchShapes)
	if len(tab.Rows) != len(DispatchShapes) || !strings.Contains(tab.Text(), "general") {
		t.Errorf("dispatch table:\n%s", tab.Text())
	}
}

// The general steps refuse only what Shape.Validate refuses (and a T beyond the grid's y limit).
func TestGeneralPlans(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {7, 3, 100000}, {1, 1, 1 << 20}} {
		if err := GeneralStep.Validate(s, h100); err != nil {
			t.Errorf("general forward refuses %v: %v", s, err)
		}
		if err := GeneralBackward.Validate(s, h100); err != nil {
			t.Errorf("general backward refuses %v: %v", s, err)
		}
	}
	if err := GeneralStep.Validate(Shape{1, 1, 0}, h100); err == nil {
		t.Error("general forward took T = 0")
	}
}

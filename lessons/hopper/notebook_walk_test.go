package hopper

import "testing"

// Walk finds every step the notebook walks through, the float32-in products and the convolutions
// included: each has its place in the order Walk compares steps in.
func TestWalkOrderHasEveryStep(t *testing.T) {
	order := walkOrder()
	if len(order) != len(AllSteps()) {
		t.Fatalf("walkOrder has %d steps, AllSteps %d", len(order), len(AllSteps()))
	}
	seen := map[string]bool{}
	for _, s := range order {
		seen[s.Name] = true
	}
	for _, s := range AllSteps() {
		if !seen[s.Name] {
			t.Errorf("Walk cannot show %q", s.Name)
		}
	}
}

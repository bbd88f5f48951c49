package lab

// Select returns the readings of rs named by whats (their What), in the order of whats: a lesson's
// headline readings picked from its sections' lists. A name that no reading of rs has gives a
// reading that says so and has no value, so a test that asks every headline for its figure in the
// recorded run fails on it.
func Select(rs []Reading, whats ...string) []Reading {
	out := make([]Reading, 0, len(whats))
	for _, w := range whats {
		found := false
		for _, r := range rs {
			if r.What == w {
				out = append(out, r)
				found = true
				break
			}
		}
		if !found {
			out = append(out, Reading{What: w + " (no reading of this name)", Value: func(Figures) (float64, bool) { return 0, false }})
		}
	}
	return out
}

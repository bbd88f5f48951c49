package lab

// Claim tests and figures the lessons' readings share beyond readings.go's.

// AtLeast is a claim's test: the value is x or more (a target such as "at least 1.5x").
func AtLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }

// Between is a claim's test: the value lies in [lo, hi] ("about the same time": a ratio near 1).
func Between(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v >= lo && v <= hi }
}

// RatioAt is Ratio at one size of a sweep: the median of variant base over that of variant, both of
// case c at size (above 1 when variant is faster).
func RatioAt(c, base, variant string, size int64) func(Figures) (float64, bool) {
	return func(f Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		b, okb := f.Run.Find(c, base, size)
		v, okv := f.Run.Find(c, variant, size)
		if !okb || !okv || b.MedianMS <= 0 || v.MedianMS <= 0 {
			return 0, false
		}
		return b.MedianMS / v.MedianMS, true
	}
}

// ProfiledOn is a profile reading's Detail: the GPU and date of the profile it reads, which may be
// another GPU's than the run's (the no-GPU mode shows the recorded run and the recorded profiles).
func ProfiledOn(f Figures) string {
	if f.Profiles == nil {
		return ""
	}
	return "profiled on " + f.Profiles.Receipt.GPU + ", " + dateOnly(f.Profiles.Receipt.Date)
}

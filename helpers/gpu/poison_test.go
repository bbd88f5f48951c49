package gpu

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/half"
)

// The 16-bit poison is a NaN whether the words are read as half or as bfloat16.
func TestPoison16IsNaNInBothFormats(t *testing.T) {
	if h := half.Half(Poison16).Float32(); !math.IsNaN(float64(h)) {
		t.Errorf("as half: %v", h)
	}
	if b := math.Float32frombits(uint32(Poison16) << 16); !math.IsNaN(float64(b)) {
		t.Errorf("as bfloat16: %v", b)
	}
}

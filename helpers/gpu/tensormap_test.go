package gpu

import (
	"slices"
	"strings"
	"testing"
)

// at is a device address for specs that are validated, never encoded.
type at uintptr

func (a at) DevicePtr() uintptr { return uintptr(a) }

// An NHWC image batch as a four-dimensional map: the driver's arrays come out innermost first, the
// strides in bytes, and the box's bytes count every dimension.
func TestTensorMapOuterDims(t *testing.T) {
	spec := TensorMapSpec{Base: at(1 << 20), DType: TensorFP16, Rows: 56, Cols: 256, BoxRows: 64, BoxCols: 64, Swizzle: Swizzle128B,
		Outer: []TensorDim{{Extent: 56, Stride: 56 * 256, Box: 2}, {Extent: 8, Stride: 56 * 56 * 256, Box: 1}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ext, str, box := spec.dims()
	if want := []uint64{256, 56, 56, 8}; !slices.Equal(ext, want) {
		t.Errorf("extents %v, want %v", ext, want)
	}
	if want := []uint64{512, 56 * 512, 56 * 56 * 512}; !slices.Equal(str, want) {
		t.Errorf("strides %v, want %v", str, want)
	}
	if want := []uint64{64, 64, 2, 1}; !slices.Equal(box, want) {
		t.Errorf("box %v, want %v", box, want)
	}
	if got := spec.BoxBytes(); got != 64*64*2*2 {
		t.Errorf("BoxBytes %d, want %d", got, 64*64*2*2)
	}
}

// Every rule the driver would enforce is refused before it, naming the rule.
func TestTensorMapValidateRefusals(t *testing.T) {
	ok := TensorMapSpec{Base: at(1 << 20), DType: TensorFP16, Rows: 16, Cols: 64, BoxRows: 8, BoxCols: 64, Swizzle: Swizzle128B}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid spec was refused: %v", err)
	}
	for _, c := range []struct {
		change func(*TensorMapSpec)
		want   string
	}{
		{func(s *TensorMapSpec) { s.Base = nil }, "no base"},
		{func(s *TensorMapSpec) { s.Base = at(1<<20 + 2) }, "16-byte aligned"},
		{func(s *TensorMapSpec) { s.Cols = 12 }, "multiple of 16 bytes"},
		{func(s *TensorMapSpec) { s.BoxCols = 128 }, "swizzle span"},
		{func(s *TensorMapSpec) { s.BoxRows = 300 }, "1 to 256"},
		{func(s *TensorMapSpec) { s.Outer = make([]TensorDim, 4) }, "rank 5"},
		{func(s *TensorMapSpec) { s.Outer = []TensorDim{{Extent: 4, Stride: 36, Box: 1}} }, "multiple of 16 bytes"},
		{func(s *TensorMapSpec) { s.Outer = []TensorDim{{Extent: 4, Stride: 1024, Box: 0}} }, "box side 0"},
		{func(s *TensorMapSpec) { s.Outer = []TensorDim{{Extent: 0, Stride: 1024, Box: 1}} }, "extent 0"},
	} {
		s := ok
		c.change(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error saying %q", s, err, c.want)
		}
	}
}

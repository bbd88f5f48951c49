package gpu

import (
	"fmt"
)

// TensorMap is a TMA descriptor (the driver's 128-byte CUtensorMap): it tells Hopper's Tensor
// Memory Accelerator where a tensor lies in device memory, how large it is, and which box one
// cp.async.bulk.tensor instruction moves between it and shared memory. A kernel takes it as a
// `const __grid_constant__ CUtensorMap` parameter; pass the *TensorMap to Kernel.Launch.
type TensorMap struct {
	words [16]uint64 // 128 bytes; Launch copies it into a 64-byte-aligned parameter slot
	Spec  TensorMapSpec
}

// TensorDType is the element type of a tensor map, with the driver's CUtensorMapDataType values.
type TensorDType int

// The element types the lessons' tensor maps use.
const (
	TensorFP16 TensorDType = 6  // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	TensorFP32 TensorDType = 7  // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
	TensorBF16 TensorDType = 9  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	TensorTF32 TensorDType = 11 // CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 (float32 in memory, rounded to TF32 on load)
)

// Bytes is the size of one element.
func (t TensorDType) Bytes() int {
	if t == TensorFP16 || t == TensorBF16 {
		return 2
	}
	return 4
}

func (t TensorDType) String() string {
	switch t {
	case TensorFP16:
		return "fp16"
	case TensorBF16:
		return "bf16"
	case TensorFP32:
		return "float32"
	case TensorTF32:
		return "tf32"
	}
	return fmt.Sprintf("TensorDType(%d)", int(t))
}

// Swizzle is how TMA permutes the 16-byte chunks of each row of a box in shared memory: with
// Swizzle128B, chunk c of row r lands at chunk c XOR (r mod 8), so that the 8 rows of a column of
// chunks sit in 8 different bank groups. It is the layout wgmma's descriptors name with the same
// mode. Values are the driver's CUtensorMapSwizzle.
type Swizzle int

// The swizzle modes.
const (
	SwizzleNone Swizzle = 0
	Swizzle32B  Swizzle = 1
	Swizzle64B  Swizzle = 2
	Swizzle128B Swizzle = 3
)

// Span is the row length in bytes the swizzle permutes (0 for none).
func (s Swizzle) Span() int {
	switch s {
	case Swizzle32B:
		return 32
	case Swizzle64B:
		return 64
	case Swizzle128B:
		return 128
	}
	return 0
}

// TensorMapSpec is a row-major tensor in device memory and the box TMA moves: two dimensions
// (rows of Cols elements), and up to three more outside them (Outer), as an image batch in NHWC
// order is channels (Cols) x W (Rows) x H x N. Reads of a box that reaches past an extent, on either
// side (a box's start may be negative), fill the missing elements with zeros, and writes there are
// dropped: that is how a TMA kernel takes any shape, and pads a convolution's input, without edge
// code.
type TensorMapSpec struct {
	Base       DevicePointer // the tensor's first element; 16-byte aligned
	DType      TensorDType
	Rows, Cols int // the two inner dimensions' extents, in elements
	// RowStride is the distance between rows in elements (Cols when 0); in bytes it must be a
	// multiple of 16.
	RowStride int
	// BoxRows and BoxCols are the box one TMA instruction moves: each at most 256, and with a
	// swizzle, BoxCols elements at most the swizzle's span (128 bytes: 64 halves or 32 floats).
	BoxRows, BoxCols int
	Swizzle          Swizzle
	// Outer are the dimensions outside the rows, innermost first (at most MaxOuterDims).
	Outer []TensorDim
}

// TensorDim is one outer dimension of a tensor map: its extent, the distance between its
// consecutive indices in elements (a multiple of 16 bytes), and the box's side along it.
type TensorDim struct {
	Extent, Stride, Box int
}

// MaxOuterDims is how many dimensions a map may have outside its rows: TMA's tiled mode takes
// tensors of rank 5 at most.
const MaxOuterDims = 3

// Validate names the first of the driver's rules that the spec breaks, before any driver call.
func (t TensorMapSpec) Validate() error {
	eb := t.DType.Bytes()
	stride := t.RowStride
	if stride == 0 {
		stride = t.Cols
	}
	switch {
	case t.DType != TensorFP16 && t.DType != TensorBF16 && t.DType != TensorFP32 && t.DType != TensorTF32:
		return fmt.Errorf("tensor map: element type %v is not one of fp16, bf16, float32, tf32", t.DType)
	case t.Base == nil:
		return fmt.Errorf("tensor map: no base buffer")
	case t.Base.DevicePtr()%16 != 0:
		return fmt.Errorf("tensor map: base address %#x is not 16-byte aligned (TMA's rule)", t.Base.DevicePtr())
	case t.Rows < 1 || t.Cols < 1:
		return fmt.Errorf("tensor map: extent %d x %d is empty", t.Rows, t.Cols)
	case int64(t.Rows) > 1<<32 || int64(t.Cols) > 1<<32:
		return fmt.Errorf("tensor map: extent %d x %d is over TMA's 2^32 per dimension", t.Rows, t.Cols)
	case stride < t.Cols:
		return fmt.Errorf("tensor map: row stride %d is shorter than a row of %d", stride, t.Cols)
	case stride*eb%16 != 0:
		return fmt.Errorf("tensor map: row stride %d elements (%d bytes) is not a multiple of 16 bytes, which TMA needs: pad the rows (for %v, make the row length a multiple of %d)",
			stride, stride*eb, t.DType, 16/eb)
	case int64(stride)*int64(eb) >= 1<<40:
		return fmt.Errorf("tensor map: row stride of %d bytes is over TMA's 2^40", stride*eb)
	case t.BoxRows < 1 || t.BoxRows > 256 || t.BoxCols < 1 || t.BoxCols > 256:
		return fmt.Errorf("tensor map: box %d x %d: each side must be 1 to 256", t.BoxRows, t.BoxCols)
	case t.BoxCols*eb%16 != 0:
		return fmt.Errorf("tensor map: a box row of %d elements is %d bytes, not a multiple of 16", t.BoxCols, t.BoxCols*eb)
	case t.Swizzle != SwizzleNone && t.BoxCols*eb > t.Swizzle.Span():
		return fmt.Errorf("tensor map: a box row of %d bytes is over the %d-byte swizzle span", t.BoxCols*eb, t.Swizzle.Span())
	case len(t.Outer) > MaxOuterDims:
		return fmt.Errorf("tensor map: %d outer dimensions, over TMA's %d (rank 5 at most)", len(t.Outer), MaxOuterDims)
	}
	for i, d := range t.Outer {
		switch {
		case d.Extent < 1 || int64(d.Extent) > 1<<32:
			return fmt.Errorf("tensor map: outer dimension %d has extent %d, must be 1 to 2^32", i, d.Extent)
		case d.Stride < 1 || d.Stride*eb%16 != 0 || int64(d.Stride)*int64(eb) >= 1<<40:
			return fmt.Errorf("tensor map: outer dimension %d has stride %d elements (%d bytes), must be a positive multiple of 16 bytes under 2^40", i, d.Stride, d.Stride*eb)
		case d.Box < 1 || d.Box > 256:
			return fmt.Errorf("tensor map: outer dimension %d has box side %d, must be 1 to 256", i, d.Box)
		}
	}
	return nil
}

// BoxBytes is the shared memory one box fills, which is also the byte count a TMA load reports to
// its mbarrier (the expected transaction count), whether or not the box reaches past the edge.
func (t TensorMapSpec) BoxBytes() int {
	n := t.BoxRows * t.BoxCols * t.DType.Bytes()
	for _, d := range t.Outer {
		n *= d.Box
	}
	return n
}

// dims are the spec's extents, strides (in bytes, of every dimension but the innermost) and box
// sides, innermost first, as cuTensorMapEncodeTiled takes them.
func (t TensorMapSpec) dims() (extents, strides, box []uint64) {
	eb := uint64(t.DType.Bytes())
	stride := t.RowStride
	if stride == 0 {
		stride = t.Cols
	}
	extents = []uint64{uint64(t.Cols), uint64(t.Rows)}
	strides = []uint64{uint64(stride) * eb}
	box = []uint64{uint64(t.BoxCols), uint64(t.BoxRows)}
	for _, d := range t.Outer {
		extents = append(extents, uint64(d.Extent))
		strides = append(strides, uint64(d.Stride)*eb)
		box = append(box, uint64(d.Box))
	}
	return extents, strides, box
}

// NewTensorMap encodes spec with the driver's cuTensorMapEncodeTiled (CUDA 12.0 and newer drivers),
// after Validate. The map holds spec.Base's address: it is valid while that buffer is.
func (s *Session) NewTensorMap(spec TensorMapSpec) (*TensorMap, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.RowStride == 0 {
		spec.RowStride = spec.Cols
	}
	m := &TensorMap{Spec: spec}
	if err := s.drv.encodeTiled(&m.words, spec); err != nil {
		return nil, fmt.Errorf("tensor map %v %d x %d, box %d x %d: %w", spec.DType, spec.Rows, spec.Cols, spec.BoxRows, spec.BoxCols, err)
	}
	return m, nil
}

package gpu

import (
	"fmt"
	"math"
	"unsafe"
)

// Elem is an element type a device buffer can hold. Half-precision values are stored as 16-bit
// words (see helpers/half).
type Elem interface {
	~float32 | ~float64 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~uint16 | ~int16 | ~uint8 | ~int8
}

// Buffer is n elements of type T in device memory.
type Buffer[T Elem] struct {
	s     *Session
	ptr   uintptr
	n     int
	owner bool
}

// Alloc allocates n elements of T. Out of memory comes back as an error that says how much was
// asked for and how much is free.
func Alloc[T Elem](s *Session, n int) (*Buffer[T], error) {
	if n < 0 {
		return nil, fmt.Errorf("allocating %d elements: the count is negative", n)
	}
	bytes := int64(n) * int64(sizeOf[T]())
	if n == 0 {
		return &Buffer[T]{s: s, owner: true}, nil
	}
	p, err := s.drv.alloc(bytes)
	if err != nil {
		free, total, merr := s.drv.memInfo()
		if merr == nil {
			return nil, fmt.Errorf("allocating %s on %s (%s free of %s): %w", FormatBytes(bytes), s.Device.Name, FormatBytes(free), FormatBytes(total), s.fault(err))
		}
		return nil, fmt.Errorf("allocating %s: %w", FormatBytes(bytes), s.fault(err))
	}
	return &Buffer[T]{s: s, ptr: p, n: n, owner: true}, nil
}

// Upload allocates a buffer the size of host and copies host into it.
func Upload[T Elem](s *Session, host []T) (*Buffer[T], error) {
	b, err := Alloc[T](s, len(host))
	if err != nil {
		return nil, err
	}
	if err := b.CopyFromHost(host); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// Len is the number of elements.
func (b *Buffer[T]) Len() int { return b.n }

// Bytes is the size in bytes.
func (b *Buffer[T]) Bytes() int64 { return int64(b.n) * int64(sizeOf[T]()) }

// DevicePtr is the buffer's device address, for kernel arguments.
func (b *Buffer[T]) DevicePtr() uintptr { return b.ptr }

// View is the elements [off, off+n) of b, sharing its memory. A view is never freed by Free; it
// is how tests hand a kernel a pointer that is not 16-byte aligned.
func (b *Buffer[T]) View(off, n int) (*Buffer[T], error) {
	if off < 0 || n < 0 || off+n > b.n {
		return nil, fmt.Errorf("view [%d, %d) is outside the buffer of %d elements", off, off+n, b.n)
	}
	return &Buffer[T]{s: b.s, ptr: b.ptr + uintptr(off*sizeOf[T]()), n: n}, nil
}

// CopyFromHost copies len(host) elements, which must equal Len, to the device.
func (b *Buffer[T]) CopyFromHost(host []T) error {
	if len(host) != b.n {
		return fmt.Errorf("copying %d elements into a buffer of %d", len(host), b.n)
	}
	if b.n == 0 {
		return nil
	}
	if err := b.s.wait(func() error { return b.s.drv.htod(b.ptr, unsafe.Pointer(&host[0]), b.Bytes()) }); err != nil {
		return fmt.Errorf("copying %s to the device: %w", FormatBytes(b.Bytes()), b.s.fault(err))
	}
	return nil
}

// CopyToHost copies the buffer into host, which must have Len elements. It waits for queued work.
func (b *Buffer[T]) CopyToHost(host []T) error {
	if len(host) != b.n {
		return fmt.Errorf("copying a buffer of %d elements into %d", b.n, len(host))
	}
	if b.n == 0 {
		return nil
	}
	if err := b.s.wait(func() error { return b.s.drv.dtoh(unsafe.Pointer(&host[0]), b.ptr, b.Bytes()) }); err != nil {
		return fmt.Errorf("copying %s from the device: %w", FormatBytes(b.Bytes()), b.s.fault(err))
	}
	b.s.synced()
	return nil
}

// ToHost returns a new slice with the buffer's contents.
func (b *Buffer[T]) ToHost() ([]T, error) {
	host := make([]T, b.n)
	return host, b.CopyToHost(host)
}

// CopyFrom copies another buffer of the same length on the device.
func (b *Buffer[T]) CopyFrom(src *Buffer[T]) error {
	if src.n != b.n {
		return fmt.Errorf("device copy of %d elements into %d", src.n, b.n)
	}
	if b.n == 0 {
		return nil
	}
	return b.s.fault(b.s.drv.dtod(b.ptr, src.ptr, b.Bytes()))
}

// Zero sets every byte to zero (queued on the default stream).
func (b *Buffer[T]) Zero() error { return b.s.fault(b.s.drv.memset8(b.ptr, 0, b.Bytes())) }

// Poison16 is what Poison writes in 16-bit words: 0x7FC0, a quiet NaN read as half (exponent all
// ones, mantissa not zero) and as bfloat16 alike. (Half's own NaN, 0x7E00, is a finite 4.3e37 in
// bfloat16, which an unwritten bfloat16 output would show instead of a NaN.)
const Poison16 = 0x7FC0

// Poison fills the buffer with a value no correct kernel writes: a quiet NaN for floating-point
// elements and all ones for integers. 16-bit words (half and bfloat16 are both kept as uint16) get
// Poison16, a NaN in both formats. An output
// element the kernel forgets to write then fails the comparison with the reference.
func (b *Buffer[T]) Poison() error {
	if b.n == 0 {
		return nil
	}
	var z T
	switch any(z).(type) {
	case float32:
		return b.s.drv.memset32(b.ptr, math.Float32bits(float32(math.NaN())), int64(b.n))
	case float64:
		nan := make([]T, b.n)
		for i := range nan {
			nan[i] = T(math.NaN())
		}
		return b.CopyFromHost(nan)
	}
	switch sizeOf[T]() {
	case 2:
		return b.s.drv.memset16(b.ptr, Poison16, int64(b.n))
	case 4:
		return b.s.drv.memset32(b.ptr, 0xFFFFFFFF, int64(b.n))
	}
	return b.s.drv.memset8(b.ptr, 0xFF, b.Bytes())
}

// Free releases the buffer's memory; freeing a view or a freed buffer does nothing.
func (b *Buffer[T]) Free() error {
	if b == nil || !b.owner || b.ptr == 0 {
		return nil
	}
	err := b.s.wait(func() error { return b.s.drv.free(b.ptr) }) // a free waits for the kernels before it
	b.ptr, b.n = 0, 0
	return b.s.fault(err)
}

// FormatBytes prints a byte count with a binary unit.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

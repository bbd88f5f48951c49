package gpu

import (
	"errors"
	"fmt"
)

// ErrUnsupported marks a refusal because of what the GPU is (its compute capability, its shared
// memory per block, its SMs), not because of a wrong input: the step cannot run on this GPU, and
// another step runs in its place. Plans return it (through Unsupported) before any launch.
var ErrUnsupported = errors.New("not supported on this GPU")

// Unsupported is a refusal that names the GPU's limit; errors.Is(err, ErrUnsupported) holds.
func Unsupported(format string, args ...any) error {
	return unsupported{msg: fmt.Sprintf(format, args...)}
}

type unsupported struct{ msg string }

func (u unsupported) Error() string { return u.msg }
func (u unsupported) Unwrap() error { return ErrUnsupported }

// NeedCC refuses a GPU below compute capability cc (times ten: 80 for 8.0), naming what the step
// uses that needs it: "matmul 8 tensor core tf32: needs compute capability 8.0 (cp.async and
// mma.sync); this GPU is 7.5". A DeviceInfo with no compute capability (Major 0) is not refused.
func NeedCC(step string, d DeviceInfo, cc int, what string) error {
	if d.Major == 0 || d.CC() >= cc {
		return nil
	}
	return Unsupported("%s: needs compute capability %d.%d (%s); this GPU is %s", step, cc/10, cc%10, what, d.ComputeCapability())
}

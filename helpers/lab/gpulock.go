package lab

import (
	"fmt"
	"os"
	"syscall"

	"github.com/cudalessons/cudalessons/helpers/rerun"
)

// GPULockEnv names a file that serialises the GPU work of several notebooks (or commands) run at
// once on one GPU: with KERNELS_GPU_LOCK=/path/to/file set, each cell's process holds an exclusive
// lock on it from opening the GPU to closing it (Env.Close, or the process's end), so no two cells
// time kernels at the same moment while their Go compiles still run side by side. The processes a
// cell starts again (rerun: Profile, Sanitize, the grader's checks) run under their parent's hold.
const GPULockEnv = "KERNELS_GPU_LOCK"

// lockGPU takes the lock GPULockEnv names, waiting for it, and returns its release; without the
// variable (or in a rerun child) it does nothing.
func lockGPU() (release func(), err error) {
	path := os.Getenv(GPULockEnv)
	if path == "" || rerun.Task() != "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", GPULockEnv, path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s=%s: locking: %w", GPULockEnv, path, err)
	}
	return func() { f.Close() }, nil // closing the file drops the lock
}

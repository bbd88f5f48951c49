package lab

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/rerun"
)

func TestGPULockSerialises(t *testing.T) {
	t.Setenv(GPULockEnv, filepath.Join(t.TempDir(), "gpu.lock"))
	release, err := lockGPU()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		second, err := lockGPU() // another open file: flock excludes it as it would another process
		if err != nil {
			t.Error(err)
		}
		got <- time.Now()
		second()
	}()
	time.Sleep(200 * time.Millisecond)
	dropped := time.Now()
	release()
	if at := <-got; at.Before(dropped) {
		t.Errorf("the second holder got the lock %v before the first dropped it", dropped.Sub(at))
	}
}

func TestGPULockIsOffWithoutTheVariableAndInChildren(t *testing.T) {
	t.Setenv(GPULockEnv, "")
	if release, err := lockGPU(); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	t.Setenv(GPULockEnv, filepath.Join(t.TempDir(), "gpu.lock"))
	t.Setenv(rerun.TaskEnv, "profile")
	first, _ := lockGPU()
	done := make(chan struct{})
	go func() { second, _ := lockGPU(); second(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Error("a rerun child waited for the lock its parent holds")
	}
	first()
}

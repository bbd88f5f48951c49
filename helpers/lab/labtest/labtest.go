// Package labtest opens the lab for GPU tests: the default build's tests need a GPU and fail
// plainly without one (use -tags nocuda on a machine without a GPU).
package labtest

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Open opens the lab with the quick method and closes it when the test ends.
func Open(t testing.TB) *lab.Env {
	t.Helper()
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if !env.GPU() {
		t.Fatalf("the default build's tests need a GPU (use -tags nocuda without one): %v", env.Why)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

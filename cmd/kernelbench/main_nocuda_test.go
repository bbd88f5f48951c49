//go:build nocuda

package main

import (
	"bytes"
	"strings"
	"testing"
)

// Without a GPU the command says so and exits with status 2, as cmd/reproduce does; usage errors
// are status 2 too, with what was wrong.
func TestNoGPU(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	var out, errs bytes.Buffer
	if code := run([]string{"-problems", "23", "-out", t.TempDir() + "/kb.json"}, &out, &errs); code != 2 {
		t.Errorf("exit status %d, want 2; stderr: %s", code, errs.String())
	}
	if !strings.Contains(errs.String(), "GPU") {
		t.Errorf("stderr %q does not say that a GPU is needed", errs.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-problems", "999"}, "no problem \"L1-999\""},
		{[]string{"-trials", "0"}, "at least one trial"},
		{[]string{"-part", "4/3"}, "want k/n"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		out.Reset()
		errs.Reset()
		if code := run(c.args, &out, &errs); code != 2 || !strings.Contains(errs.String(), c.want) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %q", c.args, code, errs.String(), c.want)
		}
	}
}

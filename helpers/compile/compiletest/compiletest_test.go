package compiletest

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// recorder is a testing.T whose failures are counted, not reported: Check's own failures are what
// this test asserts.
type recorder struct {
	*testing.T
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// A sound folder passes; each fault fails it: a missing header comment, a compile error, a kernel
// the lesson looks up that the file does not declare, a file the test does not list, a listed file
// the folder lacks, a build whose define breaks the file, a warning the test does not know of, and
// a known warning that is gone.
func TestCheckFailsEachFault(t *testing.T) {
	good := "// adds one\nextern \"C\" __global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }\n"
	warns := "// warns\nextern \"C\" __global__ void w(float *x) { int unused; x[0] = 0.0f; }\n"
	guarded := "// BAD breaks it\n#ifdef BAD\n#error the BAD build\n#endif\nextern \"C\" __global__ void k(float *x) { x[0] = 0.0f; }\n"
	cases := []struct {
		name   string
		files  map[string]string
		want   map[string][]string
		builds map[string][][]string
		known  map[string]string
		fails  bool
	}{
		{"sound", map[string]string{"a.cu": good}, map[string][]string{"a.cu": {"add_one"}}, nil, nil, false},
		{"sound, with a build", map[string]string{"b.cu": guarded}, map[string][]string{"b.cu": {"k"}}, map[string][][]string{"b.cu": {{"OTHER"}}}, nil, false},
		{"no header comment", map[string]string{"a.cu": good[len("// adds one\n"):]}, map[string][]string{"a.cu": {"add_one"}}, nil, nil, true},
		{"compile error", map[string]string{"a.cu": good + "not C++"}, map[string][]string{"a.cu": {"add_one"}}, nil, nil, true},
		{"kernel missing", map[string]string{"a.cu": good}, map[string][]string{"a.cu": {"add_two"}}, nil, nil, true},
		{"file not listed", map[string]string{"a.cu": good, "c.cu": good}, map[string][]string{"a.cu": {"add_one"}}, nil, nil, true},
		{"listed file missing", map[string]string{"a.cu": good}, map[string][]string{"a.cu": {"add_one"}, "z.cu": nil}, nil, nil, true},
		{"a known warning", map[string]string{"w.cu": warns}, map[string][]string{"w.cu": {"w"}}, nil, map[string]string{"w.cu []": "the test's"}, false},
		{"an unknown warning", map[string]string{"w.cu": warns}, map[string][]string{"w.cu": {"w"}}, nil, nil, true},
		{"a known warning gone", map[string]string{"a.cu": good}, map[string][]string{"a.cu": {"add_one"}}, nil, map[string]string{"a.cu []": "fixed since"}, true},
		{"a build that breaks", map[string]string{"b.cu": guarded}, map[string][]string{"b.cu": {"k"}}, map[string][][]string{"b.cu": {{"BAD"}}}, nil, true},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{}
		for name, code := range c.files {
			fsys[name] = &fstest.MapFile{Data: []byte(code)}
		}
		r := &recorder{T: t}
		Check(r, Folder{Dir: compile.Files{FS: fsys, Pkg: "test"}, Archs: []string{"compute_80"}, Kernels: c.want, Builds: c.builds, Warnings: c.known})
		if failed := len(r.errors) > 0; failed != c.fails {
			t.Errorf("%s: failed = %v (%v); want %v", c.name, failed, r.errors, c.fails)
		}
	}
}

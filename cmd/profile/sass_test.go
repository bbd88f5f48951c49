package main

import (
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/sass"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
	"github.com/cudalessons/cudalessons/lessons/vecadd"
)

// -sass records, through a lesson's own Walk cells in the no-GPU mode, one listing per step, keyed
// by exactly the source and options those cells ask for; it runs here on lesson 00's steps (which
// any NVRTC compiles) in place of lesson 08's.
func TestRecordSASSKeepsWhatWalkAsks(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	old := lessons
	defer func() { lessons = old }()
	var names []string
	for _, s := range vecadd.Steps {
		names = append(names, s.Name)
	}
	lessons = []lesson{{ID: vecadd.ID, Kernels: "vecadd", Walk: vecadd.Walk, Walked: func() []string { return names }}}
	dir := t.TempDir()
	if err := recordSASS(dir, ""); err != nil {
		t.Fatal(err)
	}
	files, err := sass.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	version, err := compile.Version()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Lesson != vecadd.ID || files[0].Receipt.NVRTC != version || files[0].Receipt.Date == "" {
		t.Fatalf("recorded %d files, want one for %s with this NVRTC %s: %+v", len(files), vecadd.ID, version, files)
	}
	env, err := lab.OpenWith(lab.Options{NoGPU: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.GPU() {
		t.Fatal("Options.NoGPU opened the GPU mode")
	}
	if got := len(files[0].Records); got != len(vecadd.Steps) {
		t.Errorf("%d records, want one per step (%d)", got, len(vecadd.Steps))
	}
	for _, s := range vecadd.Steps {
		src, err := kv.Source(s.File)
		if err != nil {
			t.Fatal(err)
		}
		l, ok, err := sass.Find(files, src, compile.Options{Arch: env.Arch()})
		if err != nil || !ok {
			t.Errorf("%s: no record of %s for the recorded GPU's %s (%v)", s.Name, s.File, env.Arch(), err)
			continue
		}
		if _, ok := l.Kernel(s.Kernel); !ok {
			t.Errorf("%s: the record has no kernel %s", s.Name, s.Kernel)
		}
	}
}

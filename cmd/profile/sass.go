package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/sass"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// recordSASS writes <out>/<lesson>.json (helpers/sass.File) for every lesson with Walked steps (or
// those of only): each step's Walk cell runs in the no-GPU mode, as on a machine without a GPU, and
// every listing it compiles is kept, so that the records' keys (source, code, options) are exactly
// what that mode asks for. It needs the NVRTC those steps need (12.0 or newer for compute_90a) and
// nvdisasm, no GPU.
func recordSASS(out, only string) error {
	want, err := chosen(only)
	if err != nil {
		return err
	}
	version, err := compile.Version()
	if err != nil {
		return err
	}
	tool, err := sass.Tool()
	if err != nil {
		return err
	}
	receipt := sass.Receipt{NVRTC: version, Tool: tool.String(), Date: time.Now().UTC().Format(time.RFC3339), Commit: record.ProjectCommit()}
	receipt.Host, _ = os.Hostname()
	shown := show.Out
	show.Out = io.Discard // the Walk cells' own tables and notes
	defer func() { show.Out = shown }()
	env, err := lab.OpenWith(lab.Options{NoGPU: true})
	if err != nil {
		return err
	}
	defer env.Close()
	n := 0
	for _, l := range lessons {
		if l.Walked == nil || len(want) > 0 && !want[l.ID] {
			continue
		}
		env.KeepSASS()
		for _, step := range l.Walked() {
			before := len(env.KeptSASS())
			if err := l.Walk(env, step); err != nil {
				return fmt.Errorf("%s: Walk(%q): %w", l.ID, step, err)
			}
			if len(env.KeptSASS()) == before {
				return fmt.Errorf("%s: Walk(%q) compiled no SASS here (NVRTC %s, %s): run this where NVRTC compiles the step's architecture (12.0 or newer for compute_90a; source .ci/env.sh, which picks the newest)", l.ID, step, version, tool)
			}
		}
		f := &sass.File{Lesson: l.ID, Receipt: receipt, Records: env.KeptSASS()}
		if err := sass.Save(out, f); err != nil {
			return err
		}
		st, err := os.Stat(filepath.Join(out, l.ID+".json"))
		if err != nil {
			return err
		}
		var names []string
		for _, r := range f.Records {
			k := 0
			for _, rk := range r.Kernels {
				k += len(rk.Instructions)
			}
			names = append(names, fmt.Sprintf("%s (%s, %d instructions)", r.Source, r.Arch, k))
		}
		fmt.Fprintf(shown, "%s: %d listings, %d KiB: %s\n", l.ID, len(f.Records), st.Size()>>10, strings.Join(names, ", "))
		if st.Size() > maxRecordBytes {
			fmt.Fprintf(os.Stderr, "profile -sass: %s is %d KiB, over the %d KiB a lesson's record should stay under (results/ is embedded in every notebook's build)\n", l.ID, st.Size()>>10, maxRecordBytes>>10)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("-sass: no chosen lesson has steps to record (lessons with Walked steps: %s)", walkedIDs())
	}
	return nil
}

// maxRecordBytes is the size above which a lesson's record is said to be too large.
const maxRecordBytes = 1 << 20

// chosen is the set of lesson IDs in only (comma-separated), every one known; empty for all.
func chosen(only string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		if id = strings.TrimSpace(id); id != "" {
			if _, ok := lessonByID(id); !ok {
				return nil, fmt.Errorf("-lessons: no lesson %q", id)
			}
			want[id] = true
		}
	}
	return want, nil
}

func walkedIDs() string {
	var ids []string
	for _, l := range lessons {
		if l.Walked != nil {
			ids = append(ids, l.ID)
		}
	}
	return strings.Join(ids, ", ")
}

// Package lessons lists the suite's lessons, one package per article (plus the setup lesson), in
// the order the notebooks and the reproduce command run them.
package lessons

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kc "github.com/cudalessons/cudalessons/kernels/conv"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
	kw "github.com/cudalessons/cudalessons/kernels/rwkv"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/giou"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
	"github.com/cudalessons/cudalessons/lessons/reduce"
	"github.com/cudalessons/cudalessons/lessons/rwkv"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
	"github.com/cudalessons/cudalessons/lessons/vecadd"
)

// All returns every lesson in order.
func All() []lab.Lesson {
	return []lab.Lesson{vecadd.Lesson, rwkv.Lesson, oneflow.Lesson, matmul.Lesson, reduce.Lesson, conv.Lesson, giou.Lesson, trilinear.Lesson, hopper.Lesson}
}

// KernelFolder is the kernel folder of the lesson with the given ID: each lesson's package under
// lessons/ has its CUDA sources in the folder of the same name under kernels/.
func KernelFolder(id string) (compile.Files, bool) {
	f, ok := map[string]compile.Files{
		"00_setup": kv.Kernels, "01_rwkv": kw.Kernels, "02_oneflow": ko.Kernels, "03_matmul": km.Kernels,
		"04_reductions": kr.Kernels, "05_conv": kc.Kernels, "06_giou": kg.Kernels, "07_trilinear": kt.Kernels, "08_hopper": kh.Kernels,
	}[id]
	return f, ok
}

// KernelFolders are every lesson's kernel folder, in lesson order.
func KernelFolders() []compile.Files {
	var out []compile.Files
	for _, l := range All() {
		if f, ok := KernelFolder(l.ID); ok {
			out = append(out, f)
		}
	}
	return out
}

// Pick returns the lessons whose IDs start with one of the given prefixes ("00", "01_rwkv"); no
// prefix means all.
func Pick(prefixes []string) ([]lab.Lesson, error) {
	if len(prefixes) == 0 {
		return All(), nil
	}
	var out []lab.Lesson
	for _, p := range prefixes {
		found := false
		for _, l := range All() {
			if strings.HasPrefix(l.ID, p) {
				out = append(out, l)
				found = true
			}
		}
		if !found {
			var ids []string
			for _, l := range All() {
				ids = append(ids, l.ID)
			}
			return nil, fmt.Errorf("no lesson matches %q (lessons: %s)", p, strings.Join(ids, ", "))
		}
	}
	return out, nil
}

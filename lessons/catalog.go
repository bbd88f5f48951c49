// Package lessons lists the suite's lessons, one package per article (plus the setup lesson), in
// the order the notebooks and the reproduce command run them.
package lessons

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/giou"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
	"github.com/cudalessons/cudalessons/lessons/reduce"
	"github.com/cudalessons/cudalessons/lessons/rwkv"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
	"github.com/cudalessons/cudalessons/lessons/vecadd"
)

// All returns every lesson in order.
func All() []lab.Lesson {
	return []lab.Lesson{vecadd.Lesson, rwkv.Lesson, oneflow.Lesson, matmul.Lesson, reduce.Lesson, conv.Lesson, giou.Lesson, trilinear.Lesson}
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

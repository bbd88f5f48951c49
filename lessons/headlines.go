package lessons

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
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

// Headlines are the readings that carry the main claims of the lesson with the given ID (its
// package's Headlines), nil for an unknown ID.
func Headlines(id string) []lab.Reading {
	f, ok := map[string]func() []lab.Reading{
		vecadd.ID: vecadd.Headlines, rwkv.ID: rwkv.Headlines, oneflow.ID: oneflow.Headlines, matmul.ID: matmul.Headlines,
		reduce.ID: reduce.Headlines, conv.ID: conv.Headlines, giou.ID: giou.Headlines, trilinear.ID: trilinear.Headlines, hopper.ID: hopper.Headlines,
	}[id]
	if !ok {
		return nil
	}
	return f()
}

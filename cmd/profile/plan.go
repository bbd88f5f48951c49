package main

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

// lesson is how the child process runs a lesson's step once: the lesson's own Try cell with the
// original code (checked, then timed by the quick method), and how its steps are named.
type lesson struct {
	ID      string
	Kernels string // the folder of its CUDA sources, kernels/<Kernels>
	Try     func(env *lab.Env, step, code string) error
	Step    func(name string) error // nil when the step exists
}

func stepOf[S any](find func(string) (S, error)) func(string) error {
	return func(name string) error { _, err := find(name); return err }
}

var lessons = []lesson{
	{vecadd.ID, "vecadd", vecadd.Try, stepOf(vecadd.StepByName)},
	{rwkv.ID, "rwkv", rwkv.Try, stepOf(rwkv.StepByName)},
	{oneflow.ID, "oneflow", oneflow.Try, stepOf(oneflow.MulStepByName)},
	{matmul.ID, "matmul", matmul.Try, stepOf(matmul.StepByName)},
	{reduce.ID, "reduce", reduce.TrySoftmax, stepOf(reduce.SoftmaxStepByName)},
	{conv.ID, "conv", conv.Try, stepOf(conv.StepByName)},
	{giou.ID, "giou", giou.Try, stepOf(giou.StepByName)},
	{trilinear.ID, "trilinear", trilinear.Try, stepOf(trilinear.StepByName)},
	{hopper.ID, "hopper", hopper.Try, stepOf(hopper.StepByName)},
}

func lessonByID(id string) (lesson, bool) {
	for _, l := range lessons {
		if l.ID == id {
			return l, true
		}
	}
	return lesson{}, false
}

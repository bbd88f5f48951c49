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
	// Walk is the lesson's Walk cell, and Walked the steps whose SASS is recorded (-sass): those
	// the notebook walks whose architecture an older NVRTC cannot compile; nil for none.
	Walk   func(env *lab.Env, step string) error
	Walked func() []string
}

func stepOf[S any](find func(string) (S, error)) func(string) error {
	return func(name string) error { _, err := find(name); return err }
}

var lessons = []lesson{
	{ID: vecadd.ID, Kernels: "vecadd", Try: vecadd.Try, Step: stepOf(vecadd.StepByName)},
	{ID: rwkv.ID, Kernels: "rwkv", Try: rwkv.Try, Step: stepOf(rwkv.StepByName)},
	{ID: oneflow.ID, Kernels: "oneflow", Try: oneflow.Try, Step: stepOf(oneflow.MulStepByName)},
	{ID: matmul.ID, Kernels: "matmul", Try: matmul.Try, Step: stepOf(matmul.StepByName)},
	{ID: reduce.ID, Kernels: "reduce", Try: reduce.TrySoftmax, Step: stepOf(reduce.SoftmaxStepByName)},
	{ID: conv.ID, Kernels: "conv", Try: conv.Try, Step: stepOf(conv.StepByName)},
	{ID: giou.ID, Kernels: "giou", Try: giou.Try, Step: stepOf(giou.StepByName)},
	{ID: trilinear.ID, Kernels: "trilinear", Try: trilinear.Try, Step: stepOf(trilinear.StepByName)},
	{ID: hopper.ID, Kernels: "hopper", Try: hopper.Try, Step: stepOf(hopper.StepByName), Walk: hopper.Walk, Walked: hopperWalked},
}

func lessonByID(id string) (lesson, bool) {
	for _, l := range lessons {
		if l.ID == id {
			return l, true
		}
	}
	return lesson{}, false
}

// hopperWalked are lesson 08's steps its notebook walks, every one compiled for compute_90a (NVRTC
// 12.0 or newer): the ladder, the float32-in products and the convolutions.
func hopperWalked() []string {
	var names []string
	for _, group := range [][]hopper.Step{hopper.Steps, hopper.Accurate, hopper.Convs} {
		for _, s := range group {
			names = append(names, s.Name)
		}
	}
	return names
}

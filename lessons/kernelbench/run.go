package kernelbench

import (
	"fmt"
	"io"
	"os"
	"time"

	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// TorchLimit bounds one problem's PyTorch script: its reference trials, the eager timing, and
// torch.compile's compilation and timing.
const TorchLimit = 30 * time.Minute

// Torch is the PyTorch side of a run where python3 has torch with CUDA: a function that runs each
// problem's script, under TorchLimit, in one torch.Worker for the whole run (torch's import and
// torch.compile's first compilation, 4.6 s and 10.4 s on the H200 on 2026-11-27, are paid once
// instead of once per problem); the worker, to close when the run ends; and torch's version.
// Otherwise it returns why not.
func Torch() (kb.TorchFunc, io.Closer, string, error) {
	v, err := torch.Available()
	if err != nil {
		return nil, nil, v, err
	}
	w := torch.NewWorker()
	return func(script string, args, result any) error { return w.Run(script, args, result, TorchLimit) }, w, v, nil
}

// Run runs the problems on env's GPU through the lessons' kernels, with PyTorch where python3 has
// it (its columns and KernelBench's verdicts are marked unavailable otherwise), and returns the
// receipt: env's, PyTorch's version and the project's commit. progress receives a line as each part
// finishes; partial, when not nil, the report of the problems finished so far after each one.
func Run(env *lab.Env, problems []kb.Problem, trials int, progress func(string), partial func(kb.Report)) (kb.Report, error) {
	if !env.GPU() {
		return kb.Report{}, fmt.Errorf("the KernelBench problems run on a GPU: %w", env.Why)
	}
	dir, err := os.MkdirTemp("", "kernelbench-")
	if err != nil {
		return kb.Report{}, fmt.Errorf("a scratch folder for PyTorch's files: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg := kb.Config{Trials: trials, Dir: dir, Method: env.Bench.Method, Progress: progress}
	receipt := env.Receipt
	run, worker, version, err := Torch()
	if err != nil {
		cfg.TorchWhy = err.Error()
		if progress != nil {
			progress("PyTorch's columns and KernelBench's verdicts are unavailable: " + err.Error())
		}
	} else {
		defer worker.Close()
		receipt.Torch, cfg.Torch = version, run
	}
	if partial != nil {
		cfg.Finished = func(done []kb.Result) { partial(kb.NewReport(receipt, record.ProjectCommit(), trials, done)) }
	}
	results := kb.Run(problems, NewBackend(env), cfg)
	return kb.NewReport(receipt, record.ProjectCommit(), trials, results), nil
}

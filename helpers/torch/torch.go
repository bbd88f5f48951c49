// Package torch runs the PyTorch baselines: a Python script, measured on the same GPU by the same
// method as the suite's kernels (the prelude.py beside this file: CUDA events, warm-up, L2 flush,
// median), with its inputs as JSON on stdin and its result as JSON on the last line of stdout.
//
// The interpreter is $KERNELS_PYTHON, or python3. When it has no torch with CUDA, Available says so
// and lessons mark the PyTorch column unavailable instead of failing.
package torch

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
)

//go:embed prelude.py
var prelude string

// Python is the interpreter the baselines run with.
func Python() string {
	if p := os.Getenv("KERNELS_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// Available returns PyTorch's version when python has torch with a usable CUDA device, and
// otherwise an error that says what is missing.
func Available() (string, error) {
	out, err := exec.Command(Python(), "-c",
		"import json, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.cuda.is_available()}))").Output()
	if err != nil {
		return "", fmt.Errorf("PyTorch baseline unavailable: %s cannot import torch", Python())
	}
	var v struct {
		Version string
		CUDA    bool
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil {
		return "", fmt.Errorf("PyTorch baseline unavailable: unexpected answer %q", out)
	}
	if !v.CUDA {
		return v.Version, fmt.Errorf("PyTorch baseline unavailable: torch %s sees no CUDA device", v.Version)
	}
	return v.Version, nil
}

// Run executes script (after the prelude, which defines ARGS, bench, flush_l2 and emit) with args
// as JSON on stdin, and decodes the JSON the script emits into result.
func Run(script string, args, result any, timeout time.Duration) error {
	in, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding the baseline's arguments: %w", err)
	}
	f, err := os.CreateTemp("", "baseline-*.py")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(prelude + "\n" + script); err != nil {
		f.Close()
		return err
	}
	f.Close()
	cmd := exec.Command(Python(), f.Name())
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", Python(), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("the PyTorch baseline ran over %v", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		return fmt.Errorf("the PyTorch baseline failed (%v): %s\n%s", err, lastLine(msg), tail(msg, 2000))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), result); err != nil {
		return fmt.Errorf("reading the baseline's result %q: %w", tail(last, 200), err)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Timing is the prelude's bench() result.
type Timing struct {
	MedianMS float64   `json:"median_ms"`
	MinMS    float64   `json:"min_ms"`
	MaxMS    float64   `json:"max_ms"`
	Samples  []float64 `json:"samples_ms"`
}

// Bench is the timing as the suite's kernels' timings are kept.
func (t Timing) Bench() bench.Timing {
	return bench.Timing{Median: t.MedianMS, Min: t.MinMS, Max: t.MaxMS, Samples: t.Samples}
}

// WriteFloats writes x as raw little-endian float32 values, the way a baseline script reads its
// inputs (numpy.fromfile(path, dtype="<f4")) when they are too large for JSON.
func WriteFloats(path string, x []float32) error {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadFloats reads n raw little-endian float32 values that a baseline script wrote (for example its
// output, to compare with the float64 reference).
func ReadFloats(path string, n int) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%s has %d bytes, want %d", path, len(b), 4*n)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x, nil
}

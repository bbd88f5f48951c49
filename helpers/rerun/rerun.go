// Package rerun runs the current program once more, as a child process under a wrapper command
// (compute-sanitizer, Nsight Compute), and tells the child what to do there through an environment
// variable.
//
// A notebook cell is a compiled program: to watch a reader's kernel under a tool that must start
// the process itself, the cell's program starts itself again under the tool. The child runs the
// same code up to the same call, sees Task, does the one thing asked (a single run, no timing)
// and exits; the parent reads its output:
//
//	if rerun.Task() == "sanitize" { run once; os.Exit(0) }
//	res, err := rerun.Run(rerun.Spec{Wrapper: []string{sanitizer, "--tool", "memcheck"}, Task: "sanitize", Timeout: time.Minute})
//
// The child is not a notebook cell: it writes plain text to its output, which the parent keeps.
package rerun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TaskEnv names the environment variable that tells a rerun child what to do.
const TaskEnv = "KERNELS_RERUN"

// Task is what this process was started to do by a parent's Run, or "" in an ordinary run.
func Task() string { return os.Getenv(TaskEnv) }

// Spec is one rerun of the current program.
type Spec struct {
	// Wrapper is the command the program runs under, its arguments before the program's path
	// (for example compute-sanitizer --tool memcheck); empty runs the program itself.
	Wrapper []string
	// Task is what the child should do (Task in the child).
	Task string
	// Env are extra NAME=VALUE settings for the child.
	Env []string
	// Timeout ends the child and everything it started, when it runs that long.
	Timeout time.Duration
}

// Result is how a rerun went.
type Result struct {
	Output   string        // the child's stdout and stderr together (the wrapper's report too)
	Err      error         // the child's exit: nil for status 0
	TimedOut bool          // the child was ended at the Timeout
	Took     time.Duration // wall time
}

// notebookEnv are GoNB's variables: without them the child's displays are plain text that the
// parent reads, not outputs of the cell.
var notebookEnv = []string{"GONB_PIPE", "GONB_PIPE_BACK", "GONB_DIR", "GONB_TMP_DIR", "GONB_JUPYTER_ROOT"}

// Run starts the current executable again, with the same arguments, under s.Wrapper, and waits
// for it. It fails only when the child cannot start; the child's own failure is in Result.
func Run(s Spec) (Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return Result{}, fmt.Errorf("finding this program to run it again: %w", err)
	}
	args := append(append(append([]string(nil), s.Wrapper...), exe), os.Args[1:]...)
	ctx := context.Background()
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(childEnv(os.Environ()), TaskEnv+"="+s.Task)
	cmd.Env = append(cmd.Env, s.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so that a timeout (or StopAll) ends the wrapper and the program under
	// it together; and killed with this process should it die first (Pdeathsig is tied to the
	// starting thread, so the goroutine keeps its thread until the child has ended).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", strings.Join(args[:len(s.Wrapper)+1], " "), err)
	}
	running.add(cmd.Process.Pid)
	werr := cmd.Wait()
	running.remove(cmd.Process.Pid)
	res := Result{Output: out.String(), Err: werr, Took: time.Since(start)}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
	}
	return res, nil
}

// running is the process groups of the children Run is waiting for, for StopAll.
var running = &groups{pids: map[int]bool{}}

type groups struct {
	mu   sync.Mutex
	pids map[int]bool
}

func (g *groups) add(pid int)    { g.mu.Lock(); g.pids[pid] = true; g.mu.Unlock() }
func (g *groups) remove(pid int) { g.mu.Lock(); delete(g.pids, pid); g.mu.Unlock() }

// StopAll kills every child a Run is waiting for, with everything each started (its process
// group): what an interrupted program does before it ends, so that no child of it stays on the GPU.
func StopAll() {
	running.mu.Lock()
	defer running.mu.Unlock()
	for pid := range running.pids {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func childEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := name == TaskEnv
		for _, n := range notebookEnv {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// FindTool finds one of the CUDA toolkit's programs (compute-sanitizer, ncu): in $CUDA_HOME/bin,
// /usr/local/cuda/bin, then on the PATH. The error says where it looked.
func FindTool(name string) (string, error) {
	var dirs []string
	for _, home := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home != "" {
			dirs = append(dirs, filepath.Join(home, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in %s or on the PATH: it comes with the CUDA toolkit (set CUDA_HOME to the toolkit's folder)", name, strings.Join(dirs, ", "))
}

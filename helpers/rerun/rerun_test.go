package rerun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	switch Task() {
	case "echo":
		fmt.Printf("child task=%s notebook=%q extra=%s\n", Task(), os.Getenv("GONB_PIPE"), os.Getenv("RERUN_TEST_EXTRA"))
		os.Exit(0)
	case "hang":
		fmt.Println("hanging")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

func TestRunUnderAWrapper(t *testing.T) {
	t.Setenv("GONB_PIPE", "/nonexistent/pipe")
	// env(1) as the wrapper: it runs the program after its own arguments, as compute-sanitizer does.
	res, err := Run(Spec{Wrapper: []string{"env", "WRAPPED=1"}, Task: "echo", Env: []string{"RERUN_TEST_EXTRA=yes"}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.TimedOut {
		t.Fatalf("child failed: %v (timed out %v)\n%s", res.Err, res.TimedOut, res.Output)
	}
	if want := `child task=echo notebook="" extra=yes`; !strings.Contains(res.Output, want) {
		t.Errorf("output %q lacks %q", res.Output, want)
	}
}

func TestRunEndsAHangingChild(t *testing.T) {
	start := time.Now()
	res, err := Run(Spec{Task: "hang", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Err == nil {
		t.Fatalf("a hanging child: timed out %v, err %v\n%s", res.TimedOut, res.Err, res.Output)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v to end a child with a timeout of 500ms", took)
	}
}

func TestStopAllEndsARunningChild(t *testing.T) {
	done := make(chan Result, 1)
	go func() {
		res, err := Run(Spec{Task: "hang", Timeout: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		running.mu.Lock()
		n := len(running.pids)
		running.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never started")
		}
	}
	StopAll()
	select {
	case res := <-done:
		if res.Err == nil || res.TimedOut {
			t.Errorf("a stopped child: err %v, timed out %v", res.Err, res.TimedOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StopAll did not end the child")
	}
}

func TestFindTool(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(dir, "bin", "compute-sanitizer")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_HOME", dir)
	if p, err := FindTool("compute-sanitizer"); err != nil || p != tool {
		t.Errorf("FindTool = %q, %v; want %q", p, err, tool)
	}
	t.Setenv("PATH", dir) // no such tool anywhere
	_, err := FindTool("no-such-cuda-tool")
	if err == nil || !strings.Contains(err.Error(), "CUDA_HOME") {
		t.Errorf("a missing tool: %v", err)
	}
}

package watchdog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary, run again by a test, act as a process whose work never ends.
const childEnv = "WATCHDOG_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "deadline":
		Arm(200*time.Millisecond, func(ran time.Duration) {
			fmt.Printf("stopped after %v\n", ran.Round(100*time.Millisecond))
		})
		select {} // a blocked operation: like a synchronisation with a kernel that never ends
	case "interrupt":
		OnInterrupt(func(sig os.Signal) { fmt.Printf("interrupted by %v\n", sig) })
		fmt.Println("ready")
		select {}
	}
	os.Exit(m.Run())
}

// child starts the test binary again as a child of the given kind.
func child(t *testing.T, kind string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// exitCode waits for cmd (at most limit) and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return ee.ExitCode()
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("the child was still running after %v", limit)
	}
	return -1
}

func TestDeadlineEndsABlockedProcess(t *testing.T) {
	cmd, out := child(t, "deadline")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, 10*time.Second); code != ExitCode {
		t.Fatalf("exit status %d, want %d; output:\n%s", code, ExitCode, out)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the child ended after %v, before its deadline", took)
	}
	if !strings.Contains(out.String(), "stopped after 200ms") {
		t.Errorf("the report did not run before the exit; output:\n%s", out)
	}
}

func TestInterruptEndsABlockedProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, out := child(t, "interrupt")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "ready"); {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the child never got ready")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd, 5*time.Second); code != InterruptCode {
			t.Fatalf("%v: exit status %d, want %d; output:\n%s", sig, code, InterruptCode, out)
		}
		if !strings.Contains(out.String(), "interrupted by "+sig.String()) {
			t.Errorf("%v: the report did not run; output:\n%s", sig, out)
		}
	}
}

func TestDisarmBeforeTheDeadline(t *testing.T) {
	fired := make(chan int, 1)
	exit = func(code int) { fired <- code }
	defer func() { exit = os.Exit }()
	w := Arm(50*time.Millisecond, nil)
	if _, ok := w.Disarm(); !ok {
		t.Fatal("a watch disarmed at once reports that it fired")
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case code := <-fired:
		t.Fatalf("a disarmed watch ended the process with %d", code)
	default:
	}
	w = Arm(10*time.Millisecond, nil)
	if code := <-fired; code != ExitCode {
		t.Fatalf("exit %d, want %d", code, ExitCode)
	}
	if _, ok := w.Disarm(); ok {
		t.Error("Disarm after the watch fired reports that it stopped it")
	}
}

func TestDeadlineHasAFloor(t *testing.T) {
	if d := Deadline(time.Millisecond, 100, 10*time.Second); d != 10*time.Second {
		t.Errorf("Deadline(1ms) = %v, want the floor of 10s", d)
	}
	if d := Deadline(time.Second, 100, 10*time.Second); d != 100*time.Second {
		t.Errorf("Deadline(1s) = %v, want 100s", d)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/classroom"
)

// The seats file is what the hub's configuration reads: every student with the environment of
// their server, and the instructors.
func TestSeatsFile(t *testing.T) {
	dir := t.TempDir()
	roster := filepath.Join(dir, "students.txt")
	if err := os.WriteFile(roster, []byte("alice\nbob 1\ninstructor dana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := classroom.Load(roster)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := classroom.ParseDevices("GPU 0: NVIDIA L4 (UUID: GPU-aaaaaaaa-0000-0000-0000-000000000000)\nGPU 1: NVIDIA L4 (UUID: GPU-bbbbbbbb-0000-0000-0000-000000000000)\n")
	if err != nil {
		t.Fatal(err)
	}
	s, err := build(r, devs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Students) != 2 || s.Students[1].Env["CUDA_VISIBLE_DEVICES"] != "GPU-bbbbbbbb-0000-0000-0000-000000000000" ||
		s.Students[0].Env["CUDA_VISIBLE_DEVICES"] != "GPU-aaaaaaaa-0000-0000-0000-000000000000" {
		t.Errorf("seats: %+v", s.Students)
	}
	if s.Students[0].Env[classroom.SeatEnv] != s.Students[0].Note || len(s.Instructors) != 1 || len(s.Devices) != 2 || s.Folder != classroom.Folder {
		t.Errorf("seats: %+v", s)
	}

	// On this machine (whatever nvidia-smi lists, none here): run prints the seats and writes them.
	if err := os.WriteFile(roster, []byte("alice\ncarol\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "seats.json")
	var printed strings.Builder
	if err := run(roster, out, &printed); err != nil {
		t.Fatal(err)
	}
	var back Seats
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &back)
	}
	if err != nil || len(back.Students) != 2 || back.Students[1].Name != "carol" || !strings.Contains(printed.String(), back.Students[1].Note) {
		t.Errorf("seats.json %s (%v), printed %q", b, err, printed.String())
	}
}

// A roster mistake stops it, naming the line, and writes nothing.
func TestBadRoster(t *testing.T) {
	dir := t.TempDir()
	roster := filepath.Join(dir, "students.txt")
	if err := os.WriteFile(roster, []byte("alice\nalice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "seats.json")
	err := run(roster, out, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "students.txt:2: alice is listed twice") {
		t.Errorf("a name twice: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("seats written for a bad roster")
	}
}

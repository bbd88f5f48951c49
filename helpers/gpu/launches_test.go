package gpu

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// Launch records add up by source and name, across sessions and appended writes.
func TestLaunchRecordsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "launches.jsonl")
	a, b := &Session{}, &Session{}
	for _, k := range []*Kernel{{Name: "f", Source: "1.cu"}, {Name: "f", Source: "2.cu"}, {Name: "f", Source: "1.cu"}, {Name: "g", Source: "1.cu"}} {
		a.countLaunch(k)
	}
	b.countLaunch(&Kernel{Name: "f", Source: "2.cu"})
	want := []Launch{{"1.cu", "f", 2}, {"1.cu", "g", 1}, {"2.cu", "f", 1}}
	if got := a.Launches(); !slices.Equal(got, want) {
		t.Fatalf("Launches = %v, want %v", got, want)
	}
	for _, s := range []*Session{a, b, {}} {
		if err := s.WriteLaunches(path); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.WriteLaunches(""); err != nil {
		t.Errorf("no path: %v", err)
	}
	got, err := ReadLaunches(path)
	if err != nil {
		t.Fatal(err)
	}
	want[2].Count = 2
	if !slices.Equal(got, want) {
		t.Errorf("ReadLaunches = %v, want %v", got, want)
	}
}

func TestFaultVerdict(t *testing.T) {
	e := &FaultError{Kind: "an illegal memory address (a load or store outside every allocation)",
		Launches: []LaunchInfo{{Kernel: "mul_mine", Source: "my_mul_mine.cu", Config: Config{Grid: D1(1), Block: D1(256)}}},
		Err:      errors.New("IllegalAddress")}
	msg := fmt.Sprintf("Your kernel failed to run on n = 13: copying 26 B from the device: %v", e)
	if v, ok := FaultVerdict(msg); !ok || v != "illegal memory address in mul_mine" {
		t.Errorf("FaultVerdict(%q) = %q, %v", msg, v, ok)
	}
	if v, ok := FaultVerdict("Your kernel's result is wrong at element 3"); ok {
		t.Errorf("a wrong result read as a fault: %q", v)
	}
}

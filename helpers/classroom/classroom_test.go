package classroom

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nvidia-smi -L of a machine with a whole H100, an A100 split into two MIG instances, and another
// whole H100.
const smi = `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)
  MIG 3g.40gb     Device  0: (UUID: MIG-0a0a0a0a-1b1b-2c2c-3d3d-4e4e4e4e4e4e)
  MIG 3g.40gb     Device  1: (UUID: MIG-9f9f9f9f-8e8e-7d7d-6c6c-5b5b5b5b5b5b)
GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-66666666-7777-8888-9999-000000000000)
`

func TestParseDevices(t *testing.T) {
	devs, err := ParseDevices(smi)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range devs {
		got = append(got, d.String())
	}
	want := []string{
		"GPU 0, NVIDIA H100 80GB HBM3 (GPU-11111111-2222-3333-4444-555555555555)",
		"MIG 3g.40gb instance of GPU 1, NVIDIA A100-SXM4-80GB (MIG-0a0a0a0a-1b1b-2c2c-3d3d-4e4e4e4e4e4e)",
		"MIG 3g.40gb instance of GPU 1, NVIDIA A100-SXM4-80GB (MIG-9f9f9f9f-8e8e-7d7d-6c6c-5b5b5b5b5b5b)",
		"GPU 2, NVIDIA H100 80GB HBM3 (GPU-66666666-7777-8888-9999-000000000000)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("devices:\n%s\nwant (the split GPU replaced by its instances):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := ParseDevices("GPU 0: something odd\n"); err == nil || !strings.Contains(err.Error(), "cannot read the line") {
		t.Errorf("an unreadable line: %v", err)
	}
	if devs, err := ParseDevices(""); err != nil || len(devs) != 0 {
		t.Errorf("no GPU: %v %v", devs, err)
	}
}

func parse(t *testing.T, text string) *Roster {
	t.Helper()
	r, err := Parse(strings.NewReader(text), "students.txt")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRoster(t *testing.T) {
	r := parse(t, "# the class\nalice\nbob 2   # bob on the second H100\n\ninstructor dana\ncarol MIG-9f9f9f9f-8e8e-7d7d-6c6c-5b5b5b5b5b5b\n")
	if got := strings.Join(r.Names(), ","); got != "alice,bob,carol" {
		t.Errorf("students %s", got)
	}
	if len(r.Instructors) != 1 || r.Instructors[0] != "dana" {
		t.Errorf("instructors %v", r.Instructors)
	}
	if r.Students[1].Device != "2" || r.Students[1].Line != 3 {
		t.Errorf("bob: %+v", r.Students[1])
	}
	for text, want := range map[string]string{
		"":                      "names no student",
		"# only a comment\n":    "names no student",
		"alice\nalice\n":        "students.txt:2: alice is listed twice (first on line 1)",
		"Alice\n":               `students.txt:1: "Alice" is not a user name`,
		"alice 0 extra\n":       "has 3 fields",
		"instructor\nbob\n":     `an instructor line is "instructor NAME"`,
		"bob\ninstructor bob\n": "bob is listed twice",
		"../etc\n":              "is not a user name",
		"bob\nalice;rm\n":       "is not a user name",
	} {
		_, err := Parse(strings.NewReader(text), "students.txt")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("roster %q: got %v, want an error with %q", text, err, want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.txt")); err == nil || !strings.Contains(err.Error(), "ROSTER=") {
		t.Errorf("a missing roster: %v", err)
	}
	path := filepath.Join(t.TempDir(), "class.txt")
	if err := os.WriteFile(path, []byte("zoe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := Load(path); err != nil || r.Names()[0] != "zoe" || r.Path != path {
		t.Errorf("Load: %v %v", r, err)
	}
}

func TestAssign(t *testing.T) {
	devs, err := ParseDevices(smi)
	if err != nil {
		t.Fatal(err)
	}
	// bob is given GPU 2 and carol the second MIG instance; the others go, in order, to whichever
	// device has the fewest students.
	r := parse(t, "alice\nbob 2\ncarol MIG-9f9f9f9f-8e8e-7d7d-6c6c-5b5b5b5b5b5b\ndave\nerin\nfrank\n")
	seats, err := Assign(r, devs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range seats {
		got[s.Student] = s.Env()["CUDA_VISIBLE_DEVICES"]
	}
	want := map[string]string{
		"alice": devs[0].UUID, "bob": devs[3].UUID, "carol": devs[2].UUID,
		"dave": devs[1].UUID, "erin": devs[0].UUID, "frank": devs[1].UUID,
	}
	for name, uuid := range want {
		if got[name] != uuid {
			t.Errorf("%s on %s, want %s", name, got[name], uuid)
		}
	}
	if n := seats[0].Note(); !strings.Contains(n, "alice: GPU 0, NVIDIA H100 80GB HBM3") || !strings.Contains(n, "shared with erin") {
		t.Errorf("alice's note: %s", n)
	}
	if n := seats[1].Note(); !strings.HasSuffix(n, "yours alone") {
		t.Errorf("bob's note: %s", n)
	}
	if seats[0].Env()[SeatEnv] != seats[0].Note() {
		t.Errorf("the seat's env does not carry its note")
	}

	// One GPU: everyone shares it, and the note says so.
	one, _ := ParseDevices("GPU 0: NVIDIA L4 (UUID: GPU-12345678-1234-1234-1234-123456789012)\n")
	seats, err = Assign(parse(t, "a1\na2\na3\na4\na5\n"), one)
	if err != nil {
		t.Fatal(err)
	}
	if n := seats[0].Note(); !strings.Contains(n, "the machine's only GPU, shared with 4 other students (a2, a3 and 2 more)") {
		t.Errorf("one GPU: %s", n)
	}

	// No GPU: no device, the no-GPU mode said.
	seats, err = Assign(parse(t, "alice\nbob\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, set := seats[0].Env()["CUDA_VISIBLE_DEVICES"]; set || !strings.Contains(seats[0].Note(), "no-GPU mode") {
		t.Errorf("no GPU: %v", seats[0].Env())
	}

	for roster, want := range map[string]string{
		"alice 7\n":                "students.txt:1: alice: the roster gives GPU 7, but nvidia-smi lists GPUs 0 to 2",
		"alice 1\n":                "GPU 1 is split into MIG instances",
		"alice GPU-not-this-one\n": "no GPU or MIG instance of this machine has the UUID GPU-not-this-one",
		"alice\nbob 3\ncarol 9\n":  "students.txt:3: carol",
	} {
		if _, err := Assign(parse(t, roster), devs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("roster %q: got %v, want %q", roster, err, want)
		}
	}
	if _, err := Assign(parse(t, "alice 0\n"), nil); err == nil || !strings.Contains(err.Error(), "this machine has no GPU") {
		t.Errorf("a GPU on a machine without one: %v", err)
	}
}

// Package classroom is a class on one machine, as the hub (make hub) serves it: the instructor's
// roster (a plain file naming the students, each with an optional GPU), the GPUs the machine has
// (nvidia-smi -L: whole GPUs and MIG instances), the seat each student gets (their device, from the
// roster or round robin) and where each student's notebooks are (the folder Folder in their home).
//
//	roster, err := classroom.Load("students.txt")
//	devices, err := classroom.Devices()          // what nvidia-smi -L lists; none without a GPU
//	seats, err := classroom.Assign(roster, devices)
//	for _, s := range seats { fmt.Println(s.Student, s.Env()["CUDA_VISIBLE_DEVICES"], s.Note) }
//
// The hub's configuration (.ci/hub/jupyterhub_config.py) reads the seats that `cmd/classroom seats`
// writes as JSON, so the roster is read, and its mistakes refused, by this package alone; make grade
// reads the same roster to find each student's notebooks.
package classroom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Folder is the folder of a student's home that holds their copy of the notebooks. The hub copies
// every notebook that is missing there when the student's server starts, and never overwrites one.
const Folder = "cudalessons"

// Student is one line of the roster.
type Student struct {
	Name   string // the system account (PAM logs in with its password)
	Device string // the GPU the roster gives the student: an nvidia-smi index or a GPU or MIG UUID; "" for round robin
	Line   int    // the roster line, for messages
}

// Roster is the instructor's list: students, and instructors (the hub's admins, who get no seat).
type Roster struct {
	Path        string
	Students    []Student
	Instructors []string
}

// Format is the roster's format, as the errors and the instructors' guide state it.
const Format = `one student per line: a user name (the student's system account) and, optionally, the GPU
for that student (an nvidia-smi index such as 1, or a GPU or MIG UUID from nvidia-smi -L);
"instructor NAME" for an instructor (a hub admin, no seat); # starts a comment`

// userName is what useradd accepts by default (Debian's NAME_REGEX), at most 32 characters.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,30}[$]?$`)

// Load reads the roster at path.
func Load(path string) (*Roster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("roster: %w (make hub ROSTER=students.txt, a file of %s)", err, Format)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a roster from r; name is its path in messages. A roster with no student, a name that
// is not a user name, a name listed twice or a line of more than two fields is refused, naming the
// line.
func Parse(r io.Reader, name string) (*Roster, error) {
	ro := &Roster{Path: name}
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...)))
		}
		instructor := f[0] == "instructor"
		if instructor {
			f = f[1:]
			if len(f) != 1 {
				bad("%q: an instructor line is \"instructor NAME\"", strings.TrimSpace(line))
				continue
			}
		}
		if len(f) > 2 {
			bad("%q has %d fields; a student line is a user name and, optionally, a GPU", strings.TrimSpace(line), len(f))
			continue
		}
		if !userName.MatchString(f[0]) {
			bad("%q is not a user name (lower-case letters, digits, _ and -, starting with a letter or _, at most 32 characters)", f[0])
			continue
		}
		if first, ok := seen[f[0]]; ok {
			bad("%s is listed twice (first on line %d)", f[0], first)
			continue
		}
		seen[f[0]] = n
		if instructor {
			ro.Instructors = append(ro.Instructors, f[0])
			continue
		}
		s := Student{Name: f[0], Line: n}
		if len(f) == 2 {
			s.Device = f[1]
		}
		ro.Students = append(ro.Students, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("roster %s: %w", name, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("roster: %w\n(the roster has %s)", errors.Join(errs...), Format)
	}
	if len(ro.Students) == 0 {
		return nil, fmt.Errorf("roster %s names no student (it has %s)", name, Format)
	}
	return ro, nil
}

// Names are the students' names in the roster's order.
func (r *Roster) Names() []string {
	out := make([]string, len(r.Students))
	for i, s := range r.Students {
		out[i] = s.Name
	}
	return out
}

// index reads a roster device as an nvidia-smi index.
func index(d string) (int, bool) {
	i, err := strconv.Atoi(d)
	return i, err == nil && i >= 0
}

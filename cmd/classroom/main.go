// Command classroom turns the instructor's roster into the hub's seats: it reads the roster (a plain
// file, helpers/classroom.Format), lists this machine's GPUs (nvidia-smi -L: whole GPUs and MIG
// instances), gives every student a device (the roster's, else round robin), prints the seats and
// writes them as JSON for the hub's configuration (.ci/hub/jupyterhub_config.py reads it). A roster
// mistake (an unknown GPU, a name listed twice, a name that is not a user name) stops it, naming the
// line, before the hub starts.
//
//	go run ./cmd/classroom -roster students.txt -o seats.json
//
// Exit status: 0 when the seats were written, 1 on a roster or device error, 2 on bad usage.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cudalessons/cudalessons/helpers/classroom"
)

// Seats is the file the hub reads: the roster's students with their server's environment, and the
// instructors (the hub's admins).
type Seats struct {
	Roster      string    `json:"roster"`
	Folder      string    `json:"folder"`  // the folder of each student's home that holds their notebooks
	Devices     []string  `json:"devices"` // the machine's GPUs, as nvidia-smi -L names them
	Students    []Student `json:"students"`
	Instructors []string  `json:"instructors"`
}

// Student is one student's seat as the hub uses it.
type Student struct {
	Name string            `json:"name"`
	Note string            `json:"note"` // what the doctor shows
	Env  map[string]string `json:"env"`  // CUDA_VISIBLE_DEVICES, KERNELS_SEAT
}

func main() {
	roster := flag.String("roster", "", "the instructor's roster: "+classroom.Format)
	out := flag.String("o", "", "write the seats as JSON to this file (the hub reads it)")
	flag.Parse()
	if *roster == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: classroom -roster students.txt [-o seats.json]")
		os.Exit(2)
	}
	if err := run(*roster, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "classroom:", err)
		os.Exit(1)
	}
}

// run reads the roster, seats the students on this machine's GPUs, prints the seats and writes them.
func run(rosterPath, out string, w io.Writer) error {
	r, err := classroom.Load(rosterPath)
	if err != nil {
		return err
	}
	devs, err := classroom.Devices()
	if err != nil {
		return err
	}
	seats, err := build(r, devs)
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		fmt.Fprintf(w, "%d students, no GPU on this machine: every server runs in the no-GPU mode\n", len(seats.Students))
	} else {
		fmt.Fprintf(w, "%d students on %d devices:\n", len(seats.Students), len(devs))
	}
	for _, s := range seats.Students {
		fmt.Fprintln(w, "  "+s.Note)
	}
	if len(seats.Instructors) > 0 {
		fmt.Fprintf(w, "instructors (hub admins): %v\n", seats.Instructors)
	}
	if out == "" {
		return nil
	}
	b, err := json.MarshalIndent(seats, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the seats: %w", err)
	}
	return nil
}

// build seats the roster's students on devs.
func build(r *classroom.Roster, devs []classroom.Device) (Seats, error) {
	assigned, err := classroom.Assign(r, devs)
	if err != nil {
		return Seats{}, err
	}
	s := Seats{Roster: r.Path, Folder: classroom.Folder, Instructors: r.Instructors, Devices: []string{}}
	if s.Instructors == nil {
		s.Instructors = []string{}
	}
	for _, d := range devs {
		s.Devices = append(s.Devices, d.String())
	}
	for _, a := range assigned {
		s.Students = append(s.Students, Student{Name: a.Student, Note: a.Note(), Env: a.Env()})
	}
	return s, nil
}

package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// SanitizerEnv names the compute-sanitizer tool watching the process (memcheck, racecheck or
// synccheck), set by cmd/sanitize. Tests leave out the checks that make a CUDA call fail on purpose
// under it (memcheck counts every failed call as an error), and the lab times one run instead of
// many (the timings under a sanitizer mean nothing).
const SanitizerEnv = "KERNELS_SANITIZER"

// LaunchRecordEnv names a file that every session opened for a test appends its kernel launches to
// (Session.WriteLaunches), one JSON line per kernel, when the test ends. cmd/sanitize sets it, so that
// the sanitizer pass records which kernels it watched, and a test without a GPU can prove that every
// kernel of every lesson was among them.
const LaunchRecordEnv = "KERNELS_LAUNCH_RECORD"

// Launch is how many times a session launched one kernel, named by its source file and extern "C"
// name (the same name may appear in several files, each its own kernel).
type Launch struct {
	Source string `json:"source"`
	Kernel string `json:"kernel"`
	Count  int    `json:"count"`
}

// countLaunch adds one launch of k to the session's tally.
func (s *Session) countLaunch(k *Kernel) {
	if s.launches == nil {
		s.launches = map[[2]string]int{}
	}
	s.launches[[2]string{k.Source, k.Name}]++
}

// Launches is every kernel the session launched, with how many times, sorted by source and name.
func (s *Session) Launches() []Launch { return sortedLaunches(s.launches) }

// sortedLaunches lists a tally of launches by (source, kernel), sorted by source and name.
func sortedLaunches(tally map[[2]string]int) []Launch {
	out := make([]Launch, 0, len(tally))
	for key, n := range tally {
		out = append(out, Launch{Source: key[0], Kernel: key[1], Count: n})
	}
	slices.SortFunc(out, func(a, b Launch) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Kernel, b.Kernel)
	})
	return out
}

// WriteLaunches appends the session's launches to the file at path, one JSON object per line. An
// empty path writes nothing.
func (s *Session) WriteLaunches(path string) error {
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, l := range s.Launches() {
		line, err := json.Marshal(l)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("recording the launches: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("recording the launches in %s: %w", path, err)
	}
	return f.Close()
}

// ReadLaunches reads a file that WriteLaunches appended to, adding the counts of a kernel that
// several sessions launched.
func ReadLaunches(path string) ([]Launch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := map[[2]string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var l Launch
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		sum[[2]string{l.Source, l.Kernel}] += l.Count
	}
	return sortedLaunches(sum), nil
}

package nsight

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Receipt says where and when profiles were recorded.
type Receipt struct {
	GPU     string `json:"gpu"`
	Driver  string `json:"driver"`
	NCU     string `json:"ncu"` // Nsight Compute's version and path
	Date    string `json:"date"`
	Commit  string `json:"commit"`
	Host    string `json:"host,omitempty"`
	Command string `json:"command"` // how the profiled program ran
}

// String is "NVIDIA H200, driver 580.159.04, Nsight Compute 2025.3.1.0, 2026-11-27".
func (r Receipt) String() string {
	date, _, _ := strings.Cut(r.Date, "T")
	return fmt.Sprintf("%s, driver %s, %s, %s", r.GPU, r.Driver, r.NCU, date)
}

// Profile is one step's kernel profiled once: what question it answers and what ncu measured.
type Profile struct {
	Step     string   `json:"step"`
	Question string   `json:"question"` // what the lesson asks of this profile
	Kernel   Kernel   `json:"kernel"`   // the profiled launch and its metrics
	Sections []string `json:"sections"`
	Note     string   `json:"note,omitempty"` // how it was collected when it differs from the plan
}

// File is a lesson's recorded profiles (results/profiles/<lesson>.json).
type File struct {
	Lesson   string    `json:"lesson"`
	Receipt  Receipt   `json:"receipt"`
	Profiles []Profile `json:"profiles"`
}

// Save writes f as dir/<lesson>.json.
func Save(dir string, f *File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, f.Lesson+".json"), append(b, '\n'), 0o644)
}

// ErrNoProfile means no profile is recorded for a lesson.
var ErrNoProfile = fs.ErrNotExist

// Load reads a lesson's recorded profiles from fsys (results.Profiles: profiles/<lesson>.json).
func Load(fsys fs.FS, lesson string) (*File, error) {
	b, err := fs.ReadFile(fsys, "profiles/"+lesson+".json")
	if err != nil {
		return nil, fmt.Errorf("no recorded profile of %s (make profile records them on a GPU): %w", lesson, err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("recorded profile of %s: %w", lesson, err)
	}
	return &f, nil
}

// Stall is one warp stall reason and the warps stalled for it per issued instruction.
type Stall struct {
	Reason   string
	PerIssue float64
}

const stallPrefix, stallSuffix = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"

// Stalls are the kernel's warp stall reasons (from StallMetrics), largest first, zeros left out.
func (k Kernel) Stalls() []Stall {
	var out []Stall
	for _, m := range k.Metrics {
		if !m.OK || m.Value <= 0 || !strings.HasPrefix(m.Name, stallPrefix) || !strings.HasSuffix(m.Name, stallSuffix) {
			continue
		}
		r := strings.TrimSuffix(strings.TrimPrefix(m.Name, stallPrefix), stallSuffix)
		if r == "not_issued" || strings.HasSuffix(r, "_not_issued") {
			continue // the same stalls counted on cycles with no issue: not a reason of its own
		}
		out = append(out, Stall{Reason: strings.ReplaceAll(r, "_", " "), PerIssue: m.Value})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerIssue > out[j].PerIssue })
	return out
}

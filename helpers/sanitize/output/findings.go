// Package output parses what compute-sanitizer prints: its summaries (how many errors, hazards)
// and each report (what, in which kernel, at which source line, by which thread of which block).
// The recorded sanitizer pass (helpers/sanitize) and a notebook's Sanitize call read it the same
// way.
package output

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Finding is one error or hazard that compute-sanitizer reports, with where it happened.
type Finding struct {
	What   string   // the report's first line: "Invalid __global__ write of size 4 bytes"
	Kernel string   // the kernel, when the report names it
	File   string   // the source file of the instruction (with line information)
	Line   int      // its line, 0 when the kernel was compiled without line information
	Thread string   // "(255,0,0)"
	Block  string   // "(65535,0,0)"
	Detail []string // the report's other lines: the address, the nearest allocation, the other access
}

var (
	sanitizerLine = regexp.MustCompile(`^========= (\S.*)$`)
	sanitizerMore = regexp.MustCompile(`^=========\s{2,}(\S.*)$`)
	// "at add+0x70 in /tmp/add.cu:12", "at 0x70 in add.cu:12:add", "at add+0x70 in add.cu:12"
	sanitizerAt     = regexp.MustCompile(`^at (?:([A-Za-z_]\w*)\+)?0x[0-9a-f]+ in (.+?):(\d+)(?::([A-Za-z_]\w*))?$`)
	sanitizerAtBare = regexp.MustCompile(`^at (?:([A-Za-z_]\w*)\+)?0x[0-9a-f]+`)
	sanitizerThread = regexp.MustCompile(`by thread (\(\d+,\d+,\d+\)) in block (\(\d+,\d+,\d+\))`)
	sanitizerRaceAt = regexp.MustCompile(` access at (?:([A-Za-z_]\w*)\+)?0x[0-9a-f]+ in (.+?):(\d+)`)
)

var (
	errorSummary = regexp.MustCompile(`(?m)^========= ERROR SUMMARY: (\d+) error`)
	raceSummary  = regexp.MustCompile(`(?m)^========= RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)`)
)

// Summary reads the last summary in the output: memcheck's, synccheck's and initcheck's error
// count, racecheck's hazards (its errors and warnings together); ok is false when the output has
// no summary (the tool did not attach, or the run was stopped).
func Summary(log string) (errors, hazards int, ok bool) {
	if m := errorSummary.FindAllStringSubmatch(log, -1); len(m) > 0 {
		errors = atoi(m[len(m)-1][1])
		ok = true
	}
	if m := raceSummary.FindAllStringSubmatch(log, -1); len(m) > 0 {
		last := m[len(m)-1]
		hazards = max(atoi(last[1]), atoi(last[2])+atoi(last[3]))
		ok = true
	}
	return errors, hazards, ok
}

// notFindings are the lines of compute-sanitizer's output that open no finding: its banner,
// summaries, and the host API errors that follow a kernel's fault.
var notFindings = []string{"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Program hit ",
	"Target application returned", "Saved host backtrace", "Host Frame", "This instance", "Error: process didn't terminate"}

// Findings parses compute-sanitizer's output into its reports, in order (memcheck's invalid
// accesses, racecheck's hazards, synccheck's barrier errors). The counts of a run are Run.Judge's.
func Findings(log string) []Finding {
	var out []Finding
	var cur *Finding
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := sanitizerMore.FindStringSubmatch(line); m != nil {
			if cur == nil {
				continue
			}
			d := strings.TrimSpace(m[1])
			switch {
			case sanitizerAt.MatchString(d) && cur.File == "":
				a := sanitizerAt.FindStringSubmatch(d)
				cur.Kernel = first(a[1], a[4])
				cur.File, cur.Line = a[2], atoi(a[3])
			case sanitizerAtBare.MatchString(d) && cur.Kernel == "":
				cur.Kernel = sanitizerAtBare.FindStringSubmatch(d)[1]
			case sanitizerThread.MatchString(d) && cur.Thread == "":
				t := sanitizerThread.FindStringSubmatch(d)
				cur.Thread, cur.Block = t[1], t[2]
			case strings.HasPrefix(d, "Device Frame") || strings.HasPrefix(d, "Saved host backtrace") || strings.HasPrefix(d, "Host Frame"):
			default:
				cur.Detail = append(cur.Detail, d)
			}
			continue
		}
		m := sanitizerLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := strings.TrimSpace(m[1])
		skip := false
		for _, n := range notFindings {
			skip = skip || strings.HasPrefix(text, n)
		}
		if skip {
			cur = nil
			continue
		}
		out = append(out, Finding{What: strings.TrimPrefix(text, "Error: ")})
		cur = &out[len(out)-1]
		if r := sanitizerRaceAt.FindStringSubmatch(text); r != nil { // racecheck names the place on the first line
			cur.Kernel, cur.File, cur.Line = r[1], r[2], atoi(r[3])
		}
	}
	return out
}

// Describe writes the finding in a sentence or two; code, when not empty, is the source the
// kernel was compiled from, whose line the finding names is quoted.
func (f Finding) Describe(code string) string {
	var b strings.Builder
	b.WriteString(f.What)
	if f.Kernel != "" {
		fmt.Fprintf(&b, " in kernel %s", f.Kernel)
	}
	if f.Line > 0 {
		fmt.Fprintf(&b, ", at %s line %d", filepath.Base(f.File), f.Line)
	}
	if f.Thread != "" {
		fmt.Fprintf(&b, ", by thread %s of block %s", f.Thread, f.Block)
	}
	if len(f.Detail) > 0 {
		b.WriteString(": " + strings.Join(f.Detail, "; "))
	}
	if lines := strings.Split(code, "\n"); f.Line > 0 && f.Line <= len(lines) {
		fmt.Fprintf(&b, "\n    %4d | %s", f.Line, strings.TrimRight(lines[f.Line-1], " \t"))
	}
	return b.String()
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

package nsight

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// Metric is one line of ncu's details page: its section, name, unit and value (Value is the number,
// NaN-free: OK is false for "n/a" and for text values, which stay in Text).
type Metric struct {
	Section string  `json:"section"`
	Name    string  `json:"name"`
	Unit    string  `json:"unit,omitempty"`
	Value   float64 `json:"value"`
	Text    string  `json:"text,omitempty"`
	OK      bool    `json:"ok"`
}

// Kernel is one profiled launch: the kernel, its launch and its metrics in ncu's order.
type Kernel struct {
	ID      int      `json:"id"`
	Name    string   `json:"name"`
	Block   string   `json:"block"` // "(256, 1, 1)"
	Grid    string   `json:"grid"`
	Device  string   `json:"device"` // ncu's device index
	CC      string   `json:"cc"`     // compute capability, "9.0"
	Metrics []Metric `json:"metrics"`
}

// Metric returns the first metric called name (in any section).
func (k Kernel) Metric(name string) (Metric, bool) {
	for _, m := range k.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Value is the number of the metric called name, and whether it has one.
func (k Kernel) Value(name string) (float64, bool) {
	m, ok := k.Metric(name)
	return m.Value, ok && m.OK
}

// ParseCSV reads the details page ncu prints with --csv --page details: a header line
// ("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",
// "Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value", and in newer
// versions the rule columns after them), then one line per metric of each profiled launch. Lines
// before the header and lines that are not CSV rows (==PROF== messages, the program's own output)
// are skipped; columns are found by name. Values may carry thousands separators ("1,234.5").
// Rule rows (a rule's advice, no metric) are left out. It is an error when no header or no row
// is found: then ncu profiled nothing.
func ParseCSV(text string) ([]Kernel, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, `"ID","Process ID"`) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("ncu printed no CSV details page (no kernel matched, or the program launched none)")
	}
	header, err := csv.NewReader(strings.NewReader(lines[start])).Read()
	if err != nil {
		return nil, fmt.Errorf("ncu's CSV header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"ID", "Kernel Name", "Section Name", "Metric Name", "Metric Value"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("ncu's CSV header has no %q column: %v", need, header)
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	var out []Kernel
	index := map[int]int{}
	for _, l := range lines[start+1:] {
		if !strings.HasPrefix(l, `"`) {
			continue
		}
		r := csv.NewReader(strings.NewReader(l))
		r.LazyQuotes = true
		r.FieldsPerRecord = -1
		rec, err := r.Read()
		// ncu 2025.3 leaves a metric row's empty rule columns off the end, so a row may be shorter
		// than the header; it must still reach the metric's value.
		if err != nil || len(rec) <= col["Metric Value"] || len(rec) > len(header) {
			continue // a line of the program's own output that starts with a quote
		}
		id, err := strconv.Atoi(get(rec, "ID"))
		if err != nil {
			continue
		}
		name := get(rec, "Metric Name")
		if name == "" {
			continue // a rule's row
		}
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, Kernel{ID: id, Name: get(rec, "Kernel Name"), Block: get(rec, "Block Size"), Grid: get(rec, "Grid Size"),
				Device: get(rec, "Device"), CC: get(rec, "CC")})
		}
		m := Metric{Section: get(rec, "Section Name"), Name: name, Unit: get(rec, "Metric Unit")}
		raw := get(rec, "Metric Value")
		if v, err := strconv.ParseFloat(strings.ReplaceAll(raw, ",", ""), 64); err == nil {
			m.Value, m.OK = v, true
		} else if raw != "n/a" {
			m.Text = raw
		}
		out[i].Metrics = append(out[i].Metrics, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ncu's CSV details page has a header but no metric row")
	}
	return out, nil
}

package matrix

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// CellError is a cell of an executed notebook that shows an error.
type CellError struct {
	Cell    int    `json:"cell"` // index among all the notebook's cells
	Message string `json:"message"`
}

// Executed is what an executed notebook shows: how many code cells it has, how many ran, and the
// cells that show an error (the rule of .ci/check_notebook.py: an error output, an error shown by
// helpers/show, or stderr reporting a Go panic or a failed build), except the cells tagged
// raises-exception (Jupyter's tag for a cell whose error is the point: notebook 09's mistakes).
type Executed struct {
	Cells    int         `json:"cells"`
	CellsRun int         `json:"cells_run"`
	Errors   []CellError `json:"errors"`
	Refusals int         `json:"refusal_notes"` // cells that show a step refused on this GPU
}

var tag = regexp.MustCompile(`<[^>]*>`)

// Inspect reads an executed notebook.
func Inspect(path string) (Executed, error) {
	var ex Executed
	data, err := os.ReadFile(path)
	if err != nil {
		return ex, err
	}
	var nb struct {
		Cells []struct {
			Type     string `json:"cell_type"`
			Count    *int   `json:"execution_count"`
			Metadata struct {
				Tags []string `json:"tags"`
			} `json:"metadata"`
			Outputs []struct {
				Type  string         `json:"output_type"`
				Name  string         `json:"name"`
				Text  any            `json:"text"`
				Data  map[string]any `json:"data"`
				EName string         `json:"ename"`
				EVal  string         `json:"evalue"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		return ex, fmt.Errorf("%s: not a notebook: %w", path, err)
	}
	for i, c := range nb.Cells {
		if c.Type != "code" {
			continue
		}
		ex.Cells++
		if c.Count != nil {
			ex.CellsRun++
		}
		refusal := false
		for _, o := range c.Outputs {
			msg := ""
			html := joined(o.Data["text/html"])
			switch o.Type {
			case "error":
				msg = o.EName + ": " + o.EVal
			case "display_data", "execute_result":
				if strings.Contains(html, "kernels-error") {
					msg = strings.TrimSpace(unescape(tag.ReplaceAllString(html, " ")))
				}
				refusal = refusal || strings.Contains(html, "Not on this GPU") || strings.Contains(html, "not compiled for this GPU")
			case "stream":
				if text := joined(o.Text); o.Name == "stderr" && (strings.Contains(text, "panic:") || strings.Contains(text, "[build failed]")) {
					msg = text
				}
			}
			if msg != "" && !slices.Contains(c.Metadata.Tags, "raises-exception") {
				ex.Errors = append(ex.Errors, CellError{Cell: i, Message: clip(msg, 600)})
			}
		}
		if refusal {
			ex.Refusals++
		}
	}
	return ex, nil
}

// joined is a notebook text field, a string or a list of strings, as one string.
func joined(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var b strings.Builder
		for _, s := range t {
			if str, ok := s.(string); ok {
				b.WriteString(str)
			}
		}
		return b.String()
	}
	return ""
}

func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&amp;", "&").Replace(s)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + " ..."
	}
	return s
}

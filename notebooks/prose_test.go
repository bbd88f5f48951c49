package notebooks

// The prose scan: a notebook's markdown teaches, and the run's numbers are the outputs'. A measured
// figure typed into a markdown cell is right for one GPU on one day and wrong for every reader on
// another, so the scan fails on any such figure that is not a quote (an article's published number
// or a datasheet fact, listed with its source in prose_quotes_test.go), and on words about how the
// suite was made rather than what it teaches.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A finding is one thing in a markdown cell that the scan rejects: a measured figure or a making-of
// word, with the sentence it stands in.
type finding struct {
	Kind     string // "time", "percent", "ratio", "rate", or "word"
	Figure   string // the figure or word as written, spaces normalised
	Sentence string // the sentence, table row or list item holding it
}

// The rules for a measured figure. A figure is a number (digits, optional thousands commas and
// decimals, optionally a range "13-14" or "13 to 14") that is not glued to a word or a version
// before it (v3, sm_90, fp16 are names, not numbers), followed, after at most one space, by:
//   - a unit of time: ns, µs (or μs, us), ms, s, sec, seconds, milliseconds, microseconds ("time");
//   - a percent sign or the word percent ("percent");
//   - a bandwidth or throughput: GB/s, TB/s, MB/s, GFLOP/s, TFLOP/s, GFLOPS, TFLOPS ("rate");
//   - x or × written against the number with nothing after it but a space or punctuation: 1.54x,
//     14.9×, 8x faster ("ratio"). A shape is not a ratio: 4096x4096, 16x16, 4096 x 4096, 8x4, and a
//     product written with spaces (2 x N) is not one either, nor a name such as 3xTF32.
//
// The unit must end there (12 ms, not 12 msec-something; 4 s, not 4 sizes). Counts, sizes in bytes
// or KiB, shapes, compute capabilities, tolerances and plain numbers are not measured figures. Code
// (fenced blocks and `inline code`), link targets, URLs and HTML tags are not prose and are skipped.
var (
	figureRE = regexp.MustCompile(`(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?(?:-|–|to)\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)?` +
		`(?:[ \x{00a0}\x{2009}\x{202f}]?)` +
		`(TFLOP/s|GFLOP/s|TFLOPS|GFLOPS|TB/s|GB/s|MB/s|microseconds|milliseconds|seconds|percent|sec|ns|µs|μs|us|ms|s|%|x|×)`)
	fencedRE = regexp.MustCompile("(?s)```.*?```")
	inlineRE = regexp.MustCompile("`[^`\n]*`")
	targetRE = regexp.MustCompile(`\]\([^)\s]*\)`)
	urlRE    = regexp.MustCompile(`https?://\S+`)
	tagRE    = regexp.MustCompile(`<[^>\n]*>`)
)

// unitKind says which kind of measured figure a unit makes.
func unitKind(unit string) string {
	switch unit {
	case "%", "percent":
		return "percent"
	case "x", "×":
		return "ratio"
	case "TFLOP/s", "GFLOP/s", "TFLOPS", "GFLOPS", "TB/s", "GB/s", "MB/s":
		return "rate"
	}
	return "time"
}

// The making-of words: who asked for the suite and how it was built are not lessons.
var makingOf = []*regexp.Regexp{
	regexp.MustCompile(`\bCEO\b`),
	regexp.MustCompile(`(?i)\bquoted in the task\b`),
	regexp.MustCompile(`(?i)\bthe task\b`),
	regexp.MustCompile(`(?i)\bissue\s*#?\d+`),
	regexp.MustCompile(`(?i)\bsessions?\b`),
	regexp.MustCompile(`(?i)\bhelpers?\b`),
}

// prose returns the markdown with its code, link targets, URLs and HTML tags blanked out, so that
// only the words a reader reads remain (a blanked span becomes one space, keeping words apart).
func prose(md string) string {
	for _, re := range []*regexp.Regexp{fencedRE, inlineRE, targetRE, urlRE, tagRE} {
		md = re.ReplaceAllString(md, " ")
	}
	return md
}

// sentenceEnd splits a paragraph into sentences: a full stop, question or exclamation mark followed
// by space and a capital letter, a digit, or an opening mark. A decimal point is not followed by space.
var sentenceEnd = regexp.MustCompile(`[.!?]\s+[A-Z0-9(\[*_"']`)

// sentences splits markdown prose into the units a finding quotes: each table row, heading and list
// item is one; a paragraph is split at its sentence ends. Spaces are normalised.
func sentences(md string) []string {
	var out []string
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		p := strings.Join(para, " ")
		para = nil
		for {
			loc := sentenceEnd.FindStringIndex(p)
			if loc == nil {
				break
			}
			out = append(out, strings.TrimSpace(p[:loc[0]+1]))
			p = p[loc[1]-1:]
		}
		if s := strings.TrimSpace(p); s != "" {
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		t := strings.Join(strings.Fields(line), " ")
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#"):
			flush()
			out = append(out, t)
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "> ") || listNumber.MatchString(t):
			flush()
			para = append(para, t)
		default:
			para = append(para, t)
		}
	}
	flush()
	return out
}

var listNumber = regexp.MustCompile(`^\d+\. `)

// glued reports whether the rune r, just before a number, makes the number part of a name or
// another number (v3, sm_90, m16n8k8, 1.5e3, a.5).
func glued(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '/'
}

// figures returns the measured figures in one sentence, by the rules above.
func figures(s string) []finding {
	var out []finding
	for _, m := range figureRE.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[0], m[1]
		unit := s[m[2]:m[3]]
		if r, _ := utf8.DecodeLastRuneInString(s[:start]); start > 0 && glued(r) {
			continue
		}
		next, _ := utf8.DecodeRuneInString(s[end:])
		if end < len(s) && (unicode.IsLetter(next) || unicode.IsDigit(next) || next == '_') {
			continue // 12 msec, 4 sizes, 16x16, 3xTF32: the unit does not end here
		}
		kind := unitKind(unit)
		if kind == "ratio" {
			if m[3]-m[2] > 0 && m[2] > 0 && strings.ContainsAny(s[m[2]-1:m[2]], " \u00a0\u2009\u202f") {
				continue // 2 x N: a product written out, not a ratio
			}
			if rest := strings.TrimLeft(s[end:], " \u00a0\u2009\u202f"); rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				continue // 4096x 4096 written loosely: a shape
			}
			if b := strings.TrimRight(s[:start], " \u00a0\u2009\u202f"); strings.HasSuffix(b, "x") || strings.HasSuffix(b, "×") {
				continue // the last dimension of a shape: 4096 x 4096x
			}
		}
		out = append(out, finding{Kind: kind, Figure: strings.Join(strings.Fields(s[start:end]), " "), Sentence: s})
	}
	return out
}

// words returns the making-of words in one sentence.
func words(s string) []finding {
	var out []finding
	for _, re := range makingOf {
		for _, w := range re.FindAllString(s, -1) {
			out = append(out, finding{Kind: "word", Figure: w, Sentence: s})
		}
	}
	return out
}

// scanMarkdown returns every finding in one markdown cell that no quote allows, and marks in used
// the quotes that allowed one.
func scanMarkdown(md string, qs []quote, used map[int]bool) []finding {
	var out []finding
	for _, s := range sentences(prose(md)) {
		out = append(out, words(s)...)
		for _, f := range figures(s) {
			if i := quoted(f, qs); i >= 0 {
				used[i] = true
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// quoted returns the index of the quote that allows the figure f, or -1: same figure, and the
// quote's context phrase in f's sentence (case folded).
func quoted(f finding, qs []quote) int {
	low := strings.ToLower(f.Sentence)
	for i, q := range qs {
		if q.Figure == f.Figure && strings.Contains(low, strings.ToLower(q.Context)) {
			return i
		}
	}
	return -1
}

// lessonNotebooks are the numbered notebooks of this folder, in order.
func lessonNotebooks(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("[0-9][0-9]*_*.ipynb") // 04_softmax, 04b_layernorm, ...
	if err != nil || len(paths) == 0 {
		t.Fatalf("no notebooks found (%v)", err)
	}
	sort.Strings(paths)
	return paths
}

// markdownCell is one markdown cell's index in its notebook and its text.
type markdownCell struct {
	Index int
	Text  string
}

// notebookCells reads notebook p and returns its cells in order.
func notebookCells(t *testing.T, p string) []notebookCell {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []notebookCell `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return nb.Cells
}

// markdownCells reads notebook p and returns its markdown cells in order.
func markdownCells(t *testing.T, p string) []markdownCell {
	t.Helper()
	var out []markdownCell
	for i, c := range notebookCells(t, p) {
		if c.CellType == "markdown" {
			out = append(out, markdownCell{i, joinText(c.Source)})
		}
	}
	return out
}

// notebookCell is the part of a notebook cell the scan reads.
type notebookCell struct {
	CellType string          `json:"cell_type"`
	Source   json.RawMessage `json:"source"`
}

// TestNotebookProse scans every markdown cell of every lesson notebook: no measured figure that is
// not a listed quote, no making-of word. Each finding is reported as notebook, cell index, figure and
// sentence. A quote that no cell uses any more fails too, so the list cannot keep stale exceptions.
func TestNotebookProse(t *testing.T) {
	used := map[int]bool{}
	n := 0
	for _, p := range lessonNotebooks(t) {
		for _, c := range markdownCells(t, p) {
			for _, f := range scanMarkdown(c.Text, quotes, used) {
				n++
				what := "measured figure (" + f.Kind + ")"
				if f.Kind == "word" {
					what = "making-of word"
				}
				t.Errorf("%s cell %d: %s %q in: %s", p, c.Index, what, f.Figure, f.Sentence)
			}
		}
	}
	for i, q := range quotes {
		if !used[i] {
			t.Errorf("quote %q (%q, %s) is used by no markdown cell: remove it from prose_quotes_test.go", q.Figure, q.Context, q.Source)
		}
	}
	if n > 0 {
		t.Logf("%d findings: say what the reader can check on the page (the output below) instead of typing the run's numbers, or add an article or datasheet figure to prose_quotes_test.go with its source", n)
	}
}

// TestQuotesHaveSources: every quote names its source and a context phrase that pins it to a sentence.
func TestQuotesHaveSources(t *testing.T) {
	for _, q := range quotes {
		if q.Source == "" || q.Context == "" || q.Figure == "" {
			t.Errorf("quote %+v: figure, context and source are all required", q)
		}
		if fs := figures(q.Figure); len(fs) != 1 || fs[0].Figure != q.Figure {
			t.Errorf("quote %q: not one measured figure by the scan's rules (%v), so it allows nothing", q.Figure, fs)
		}
	}
}

// TestFigureRules: the classifier on sentences that must be flagged and sentences that must pass.
func TestFigureRules(t *testing.T) {
	flag := map[string]string{ // sentence: the figure the scan must report
		"Step 4 takes 98 µs on this GPU.":                "98 µs",
		"step 4 ran in 0.284 ms":                         "0.284 ms",
		"a launch costs about 3us":                       "3us",
		"the loop took 12 ns per element":                "12 ns",
		"it finished in 2.5 s.":                          "2.5 s",
		"it finished in 3 seconds.":                      "3 seconds",
		"reaches 94.1% of cuBLAS":                        "94.1%",
		"reaches 94 percent of cuBLAS":                   "94 percent",
		"step 4 is 1.54x torch.compile":                  "1.54x",
		"the fused kernel is 14.9× faster":               "14.9×",
		"all-zero inputs run 8x faster":                  "8x",
		"(1.63x)":                                        "1.63x",
		"it copies at 2,950 GB/s":                        "2,950 GB/s",
		"about 3.0 TB/s counting read and write":         "3.0 TB/s",
		"it sustains 51.2 TFLOP/s":                       "51.2 TFLOP/s",
		"it sustains 700 GFLOPS":                         "700 GFLOPS",
		"| v2 float4 | 13-14 ms |":                       "13-14 ms",
		"between 36 to 40 µs":                            "36 to 40 µs",
		"The table: 1.25x, met.":                         "1.25x",
		"grid-stride at 64K: 36 µs; naive at 1M: 28 µs.": "36 µs",
	}
	for s, want := range flag {
		fs := figures(s)
		if len(fs) == 0 || fs[0].Figure != want {
			t.Errorf("%q: want %q flagged first, got %v", s, want, fs)
		}
	}
	pass := []string{
		"A and B are 4096 x 4096 matrices.",
		"A and B are 4096x4096 matrices in 16x16 tiles.",
		"the 8x4 lane grid of a warp",
		"each thread computes a 4x4 block, 2 x N bytes in all",
		"split into 3xTF32 or fp16x3 products",
		"compute capability 9.0 (sm_90) and 8.6",
		"48 KiB of shared memory, 1024 threads per block, 65504 is the largest half",
		"tolerance 1e-2 on 32M elements of 4 bytes",
		"steps v3 and v4, 16 warps, 132 SMs, 128 x 256 tiles",
		"the m16n8k8 fragment; the s2 file",
		"2 waves of 132 blocks",
		"we use 256 threads",
	}
	for _, s := range pass {
		if fs := figures(s); len(fs) > 0 {
			t.Errorf("%q: want no measured figure, got %v", s, fs)
		}
	}
	code := "Run `go test -timeout 75m` and see ```\nelapsed 12 ms\n``` then [the page](https://x.org/5x)."
	if fs := figures(strings.Join(sentences(prose(code)), " ")); len(fs) != 0 {
		t.Errorf("code, link targets and URLs must be skipped, got %v", fs)
	}
	for s, want := range map[string]string{
		"the CEO's H100 numbers":            "CEO",
		"the figure quoted in the task":     "quoted in the task",
		"see issue 23 for why":              "issue 23",
		"fixed in issue #4":                 "issue #4",
		"measured in an earlier session":    "session",
		"a helper wrote the first version.": "helper",
	} {
		fs := words(s)
		if len(fs) == 0 || fs[0].Figure != want {
			t.Errorf("%q: want making-of word %q, got %v", s, want, fs)
		}
	}
	for _, s := range []string{"each warp issues four wgmma", "the package `helpers/show` prints it", "a task queue"} {
		if fs := words(prose(s)); len(fs) != 0 {
			t.Errorf("%q: want no making-of word, got %v", s, fs)
		}
	}
	qs := []quote{{Figure: "45 ms", Context: "GTX1070M", Source: "test"}}
	used := map[int]bool{}
	if fs := scanMarkdown("The article's v0 took 45 ms on a GTX1070M. Ours took 45 ms.", qs, used); len(fs) != 1 || !used[0] {
		t.Errorf("a quote allows its figure only in a sentence with its context: got %v, used %v", fs, used)
	}
	if got := sentences("One is 1.5 ms. Two is\n2 ms.\n\n| a | 3 ms |\n- item 4 ms\n- item 5 ms"); len(got) != 5 {
		t.Errorf("sentences: want 5, got %d: %q", len(got), got)
	}
}

// TestGlossaryLinks: every link from a notebook's markdown into docs/GLOSSARY.md names an entry
// that exists there, so a first use of a term always lands on its definition.
func TestGlossaryLinks(t *testing.T) {
	g, err := os.ReadFile(filepath.Join("..", "docs", "GLOSSARY.md"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([\w-]+)"></a>`).FindAllStringSubmatch(string(g), -1) {
		ids[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`\(#([\w-]+)\)`).FindAllStringSubmatch(string(g), -1) {
		if !ids[m[1]] {
			t.Errorf("docs/GLOSSARY.md links to #%s, which it does not define", m[1])
		}
	}
	link := regexp.MustCompile(`\]\(\.\./docs/GLOSSARY\.md#([\w-]+)\)`)
	links := 0
	for _, p := range lessonNotebooks(t) {
		for _, c := range markdownCells(t, p) {
			for _, m := range link.FindAllStringSubmatch(c.Text, -1) {
				links++
				if !ids[m[1]] {
					t.Errorf("%s cell %d links to GLOSSARY.md#%s, which docs/GLOSSARY.md does not define", p, c.Index, m[1])
				}
			}
		}
	}
	if links == 0 {
		t.Error("no notebook links to docs/GLOSSARY.md")
	}
}

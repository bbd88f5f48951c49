package sass

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Key names one compile exactly: the source's name, a hash of its code and a hash of its compile
// options. A record is used only for the same key, so a changed source or option never matches an
// old listing.
type Key struct {
	Source      string `json:"source"`
	CodeHash    string `json:"code_sha256"`
	OptionsHash string `json:"options_sha256"`
}

// KeyOf is the key of compiling src with opts. The architecture counts as CompileCubin reads it
// (sm_90, compute_90 and "90" are one; empty is compile.DefaultArch); NoCache does not count.
func KeyOf(src compile.Source, opts compile.Options) Key {
	arch := opts.Arch
	if arch == "" {
		arch = compile.DefaultArch
	}
	arch = "compute_" + strings.TrimPrefix(strings.TrimPrefix(arch, "sm_"), "compute_")
	o, _ := json.Marshal(struct {
		Arch     string   `json:"arch"`
		FastMath bool     `json:"fast_math"`
		Defines  []string `json:"defines"`
		Extra    []string `json:"extra"`
	}{arch, opts.FastMath, opts.Defines, opts.Extra})
	return Key{Source: src.Name, CodeHash: hash(src.Code), OptionsHash: hash(string(o))}
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Receipt says how and when a record was made.
type Receipt struct {
	NVRTC  string `json:"nvrtc"`    // the NVRTC that compiled the sources, "13.0"
	Tool   string `json:"nvdisasm"` // the nvdisasm that read them: version and path
	Date   string `json:"date"`     // RFC 3339, UTC
	Commit string `json:"commit"`   // the project's commit (record.ProjectCommit)
	Host   string `json:"host,omitempty"`
}

// Day is the receipt's date without its time: "2026-11-27".
func (r Receipt) Day() string {
	d, _, _ := strings.Cut(r.Date, "T")
	return d
}

// Record is one recorded listing: what was compiled (Key, with the options in words), for which
// architecture, and its kernels' instructions, each written on one line (see Encode).
type Record struct {
	Key
	Options  compile.Options  `json:"options"` // as the caller gave them (for a reader of the file)
	Arch     string           `json:"arch"`    // the real architecture, "sm_90a"
	LineInfo bool             `json:"line_info"`
	Kernels  []RecordedKernel `json:"kernels"`
}

// RecordedKernel is a kernel of a record: its name, the files its source lines come from, and one
// line per instruction: "offset line file pred op args" separated by tabs, offset in hex, file an
// index into Files (-1 without line information).
type RecordedKernel struct {
	Name         string   `json:"name"`
	Files        []string `json:"files,omitempty"`
	Instructions []string `json:"instructions"`
}

// File is a lesson's recorded listings, results/sass/<lesson>.json.
type File struct {
	Lesson  string   `json:"lesson"`
	Receipt Receipt  `json:"receipt"`
	Records []Record `json:"records"`
}

// NewRecord is the record of l, the listing of src compiled with opts.
func NewRecord(src compile.Source, opts compile.Options, l *Listing) Record {
	r := Record{Key: KeyOf(src, opts), Options: opts, Arch: l.Arch, LineInfo: l.LineInfo}
	r.Options.NoCache = false
	for _, k := range l.Kernels {
		rk := RecordedKernel{Name: k.Name, Instructions: make([]string, 0, len(k.Instructions))}
		files := map[string]int{}
		for _, in := range k.Instructions {
			fi := -1
			if in.File != "" {
				i, ok := files[in.File]
				if !ok {
					i = len(rk.Files)
					files[in.File] = i
					rk.Files = append(rk.Files, in.File)
				}
				fi = i
			}
			rk.Instructions = append(rk.Instructions, fmt.Sprintf("%x\t%d\t%d\t%s\t%s\t%s", in.Offset, in.Line, fi, in.Pred, in.Op, in.Args))
		}
		r.Kernels = append(r.Kernels, rk)
	}
	return r
}

// Listing is the recorded listing again, quoting code (the source the key was made of) and made by
// the receipt's NVRTC and nvdisasm. Recorded says it was read from the record.
func (r Record) Listing(code string, rc Receipt) (*Listing, error) {
	l := &Listing{Source: r.Source, Code: code, Arch: r.Arch, NVRTC: rc.NVRTC, Tool: rc.Tool, LineInfo: r.LineInfo, Recorded: &rc}
	for _, rk := range r.Kernels {
		k := Kernel{Name: rk.Name, Instructions: make([]Instruction, 0, len(rk.Instructions))}
		for _, line := range rk.Instructions {
			f := strings.SplitN(line, "\t", 6)
			if len(f) != 6 {
				return nil, fmt.Errorf("recorded SASS of %s, kernel %s: instruction %q is not offset, line, file, predicate, opcode and operands", r.Source, rk.Name, line)
			}
			off, err1 := strconv.ParseInt(f[0], 16, 64)
			ln, err2 := strconv.Atoi(f[1])
			fi, err3 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || err3 != nil || fi < -1 || fi >= len(rk.Files) {
				return nil, fmt.Errorf("recorded SASS of %s, kernel %s: instruction %q: bad offset, line or file", r.Source, rk.Name, line)
			}
			in := Instruction{Offset: int(off), Line: ln, Pred: f[3], Op: f[4], Args: f[5]}
			if fi >= 0 {
				in.File = rk.Files[fi]
			}
			k.Instructions = append(k.Instructions, in)
		}
		l.Kernels = append(l.Kernels, k)
	}
	return l, nil
}

// Save writes f to dir/<lesson>.json.
func Save(dir string, f *File) error {
	if f.Lesson == "" {
		return fmt.Errorf("saving recorded SASS: the file names no lesson")
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("saving the recorded SASS of %s: %w", f.Lesson, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving the recorded SASS of %s: %w", f.Lesson, err)
	}
	p := filepath.Join(dir, f.Lesson+".json")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("saving the recorded SASS of %s: %w", f.Lesson, err)
	}
	return nil
}

// Load reads every <lesson>.json at the top of fsys (results.SASS, or a folder).
func Load(fsys fs.FS) ([]File, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, fmt.Errorf("listing the recorded SASS: %w", err)
	}
	var out []File
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("reading the recorded SASS %s: %w", n, err)
		}
		var f File
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("reading the recorded SASS %s: %w", n, err)
		}
		if want := strings.TrimSuffix(path.Base(n), ".json"); f.Lesson != want {
			return nil, fmt.Errorf("recorded SASS %s names lesson %q", n, f.Lesson)
		}
		out = append(out, f)
	}
	return out, nil
}

// Find is the recorded listing of src compiled with opts: only a record of the same key (name,
// code and options) matches. The listing quotes src's code and carries its file's receipt.
func Find(files []File, src compile.Source, opts compile.Options) (*Listing, bool, error) {
	key := KeyOf(src, opts)
	for _, f := range files {
		for _, r := range f.Records {
			if r.Key == key {
				l, err := r.Listing(src.Code, f.Receipt)
				return l, err == nil, err
			}
		}
	}
	return nil, false, nil
}

package compile

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// globalRE matches the start of an extern "C" kernel up to its name: the qualifiers between
// __global__ and the name (void, __launch_bounds__(...), __cluster_dims__(...) with their arguments,
// one level of parentheses deep, or an upper-case macro that stands for some of them) may span lines.
var globalRE = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+(?:(?:__[A-Za-z0-9_]+__|[A-Z][A-Z0-9_]*)\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*)*([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// defineRE matches a function-like macro (after line continuations are joined): name, parameters,
// body.
var defineRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)(.*)$`)

// Kernels lists the extern "C" __global__ functions a CUDA source defines, in the order they appear,
// each once, whether or not a define leaves it out of a build; comments are ignored. A kernel
// defined through a function-like macro whose parameter is the kernel's name
// (#define MEAN16(name, T) extern "C" __global__ void name(...)) is listed under the name each use of
// the macro gives it. It reads the source, not PTX, so it needs no compiler: the sanitizer pass's
// coverage test uses it to list what must have been launched.
func Kernels(code string) []string {
	code = strings.ReplaceAll(stripComments(code), "\\\n", " ")
	type found struct {
		at   int
		name string
	}
	var all []found
	// Macros that define a kernel named by one of their parameters: the macro's name and the
	// parameter's position.
	macros := map[string]int{}
	for _, d := range defineRE.FindAllStringSubmatch(code, -1) {
		params := strings.Split(d[2], ",")
		for _, m := range globalRE.FindAllStringSubmatch(d[3], -1) {
			for i, p := range params {
				if strings.TrimSpace(p) == m[1] {
					macros[d[1]] = i
				}
			}
		}
	}
	body := defineRE.ReplaceAllStringFunc(code, func(d string) string { return strings.Repeat(" ", len(d)) })
	for _, m := range globalRE.FindAllStringSubmatchIndex(body, -1) {
		all = append(all, found{m[2], body[m[2]:m[3]]})
	}
	for macro, i := range macros {
		use := regexp.MustCompile(`\b` + macro + `\s*\(([^()]*)`)
		for _, m := range use.FindAllStringSubmatchIndex(body, -1) {
			if args := strings.Split(body[m[2]:m[3]], ","); i < len(args) {
				all = append(all, found{m[0], strings.TrimSpace(args[i])})
			}
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].at < all[b].at })
	var out []string
	for _, f := range all {
		if f.name != "" && !slices.Contains(out, f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

// stripComments blanks // and /* */ comments, keeping string literals (extern "C") intact.
func stripComments(code string) string {
	var b strings.Builder
	for i := 0; i < len(code); i++ {
		switch {
		case code[i] == '"':
			j := i + 1
			for j < len(code) && code[j] != '"' && code[j] != '\n' {
				if code[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(code))
			b.WriteString(code[i:end])
			i = end - 1
		case strings.HasPrefix(code[i:], "//"):
			for i < len(code) && code[i] != '\n' {
				i++
			}
			if i < len(code) {
				b.WriteByte('\n')
			}
		case strings.HasPrefix(code[i:], "/*"):
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			b.WriteByte(' ')
			i += end + 3
		default:
			b.WriteByte(code[i])
		}
	}
	return b.String()
}

package sass

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// ToolInfo is the nvdisasm that runs: its path and CUDA release ("11.8").
type ToolInfo struct {
	Path    string
	Version string
}

// String is "nvdisasm 11.8 (/usr/bin/nvdisasm)".
func (t ToolInfo) String() string { return fmt.Sprintf("nvdisasm %s (%s)", t.Version, t.Path) }

// Tool finds nvdisasm, preferring the toolkit of the NVRTC this process uses (a cubin is best read
// by the nvdisasm of the same CUDA release): beside the loaded libnvrtc (its toolkit's bin/), the
// bin/ beside the headers .ci/env.sh picked for NVRTC ($KERNELS_NVRTC_INCLUDE), $CUDA_NVRTC_HOME/bin,
// $CUDA_HOME/bin, /usr/local/cuda/bin, then PATH. The error says how to install one.
func Tool() (ToolInfo, error) { return tool() }

var tool = sync.OnceValues(func() (ToolInfo, error) {
	var dirs []string
	if lib := compile.Library(); lib != "" {
		d := filepath.Dir(lib) // .../cuda-13.0/lib64 or .../targets/x86_64-linux/lib
		dirs = append(dirs, filepath.Join(d, "..", "bin"), filepath.Join(d, "..", "..", "..", "bin"))
	}
	if inc := os.Getenv("KERNELS_NVRTC_INCLUDE"); inc != "" {
		dirs = append(dirs, filepath.Join(filepath.Dir(inc), "bin"))
	}
	for _, env := range []string{"CUDA_NVRTC_HOME", "CUDA_HOME"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/bin")
	var path string
	for _, d := range dirs {
		p := filepath.Join(d, "nvdisasm")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			path = filepath.Clean(p)
			break
		}
	}
	if path == "" {
		p, err := exec.LookPath("nvdisasm")
		if err != nil {
			return ToolInfo{}, fmt.Errorf("no nvdisasm (looked in %s and on PATH): the SASS view needs it; bash .ci/setup.sh installs one (Debian and Ubuntu: the nvidia-cuda-toolkit package), or set CUDA_HOME to a CUDA toolkit", strings.Join(dirs, ", "))
		}
		path = p
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // /bin/nvdisasm is /usr/bin/nvdisasm where /bin links to /usr/bin
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return ToolInfo{}, fmt.Errorf("%s --version: %v: %s", path, err, bytes.TrimSpace(out))
	}
	return ToolInfo{Path: path, Version: releaseOf(string(out))}, nil
})

var releaseRe = regexp.MustCompile(`release (\d+\.\d+)`)

func releaseOf(versionText string) string {
	if m := releaseRe.FindStringSubmatch(versionText); m != nil {
		return m[1]
	}
	return "of unknown release"
}

// Disassemble runs nvdisasm on a cubin (with line information and without the control-flow noise)
// and parses its listing. An nvdisasm older than the NVRTC that made the cubin may not read it: the
// error then names both.
func Disassemble(c *compile.Cubin) (*Listing, error) {
	t, err := Tool()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "sass-*.cubin")
	if err != nil {
		return nil, fmt.Errorf("disassembling %s: %w", c.Name, err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(c.Image)
	if cerr := f.Close(); werr != nil || cerr != nil {
		return nil, fmt.Errorf("disassembling %s: writing the cubin: %w", c.Name, errors.Join(werr, cerr))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(t.Path, "--print-line-info", "--print-code", f.Name())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s could not disassemble %s (a %s cubin from NVRTC %s; an nvdisasm older than the NVRTC may not read it: set CUDA_HOME to that NVRTC's toolkit): %v: %s",
			t, c.Name, c.Arch, c.NVRTC, err, strings.TrimSpace(stderr.String()))
	}
	kernels, err := Parse(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", t, c.Name, err)
	}
	return &Listing{Source: c.Name, Arch: c.Arch, NVRTC: c.NVRTC, Tool: t.String(), LineInfo: c.LineInfo, Kernels: kernels}, nil
}

// Of compiles src for the real architecture of opts.Arch (compile.CompileCubin) and disassembles it.
func Of(src compile.Source, opts compile.Options) (*Listing, error) {
	c, err := compile.CompileCubin(src, opts)
	if err != nil {
		return nil, err
	}
	lst, err := Disassemble(c)
	if err != nil {
		return nil, err
	}
	lst.Code = src.Code
	return lst, nil
}

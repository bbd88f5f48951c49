package compile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The project's env script (.ci/env.sh) picks NVRTC (the newest CUDA) and the cuda.h that cgo builds
// gorgonia.org/cu against (11.x or 12.x) separately. These tests run it on fake toolkit folders: its
// CUDA_ENV_ROOT puts a temporary folder in front of every fixed path it looks at.

// fakeToolkit writes a CUDA install under root+dir: include/cuda.h of the version (as cuda.h spells
// it, 13000 for 13.0), and with nvrtc the NVRTC headers and lib64/libnvrtc.so.
func fakeToolkit(t *testing.T, root, dir string, version int, nvrtc bool) {
	t.Helper()
	inc := filepath.Join(root, dir, "include")
	write(t, filepath.Join(inc, "cuda.h"), fmt.Sprintf("#define CUDA_VERSION %d\n", version))
	if nvrtc {
		write(t, filepath.Join(inc, "nvrtc.h"), "")
		write(t, filepath.Join(inc, "cuda_fp16.h"), "")
		write(t, filepath.Join(root, dir, "lib64", "libnvrtc.so"), "")
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// selection is what env.sh exported, and what cuda_env_show printed.
type selection struct {
	NVRTC, NVRTCInclude, NVRTCLib, CGO, CGOInclude, CFlags, LDFlags, LibraryPath, Shown string
}

// sourceEnv sources .ci/env.sh in a clean environment rooted at root, with the given variables.
func sourceEnv(t *testing.T, root string, vars ...string) selection {
	t.Helper()
	script, err := filepath.Abs("../../.ci/env.sh")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\x1f"
	cmd := exec.Command("bash", "-c", `set -euo pipefail; source "$1"
printf '%s\x1f' "$KERNELS_NVRTC_CUDA" "$KERNELS_NVRTC_INCLUDE" "$KERNELS_NVRTC_LIBDIR" "$KERNELS_CGO_CUDA" \
  "$KERNELS_CGO_INCLUDE" "$CGO_CFLAGS" "$CGO_LDFLAGS" "${LD_LIBRARY_PATH:-}"
cuda_env_show || true`, "bash", script)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CUDA_ENV_ROOT=" + root}, vars...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing env.sh: %v\n%s", err, out)
	}
	f := strings.SplitN(string(out), sep, 9)
	if len(f) != 9 {
		t.Fatalf("unexpected output of env.sh:\n%s", out)
	}
	return selection{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]}
}

func TestEnvScriptSelection(t *testing.T) {
	type want struct{ nvrtc, nvrtcDir, cgo, cgoInclude string }
	cases := []struct {
		name  string
		setup func(root string)
		vars  func(root string) []string
		want  want
		shown string // a phrase cuda_env_show must print
	}{
		{
			name:  "neither",
			setup: func(string) {},
			want:  want{},
			shown: "no NVRTC found",
		},
		{
			name: "11.8 only",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-11.8", 11080, true)
			},
			want: want{"11.8", "usr/local/cuda-11.8", "11.8", "usr/local/cuda-11.8/include"},
		},
		{
			name: "13 only",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
			},
			vars:  func(root string) []string { return []string{"CUDA_HOME=" + root + "/usr/local/cuda-13.0"} },
			want:  want{nvrtc: "13.0", nvrtcDir: "usr/local/cuda-13.0"},
			shown: "no cuda.h of CUDA 11.x or 12.x for cgo",
		},
		{
			name: "11.8 and 13",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-11.8", 11080, true)
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
			},
			vars: func(root string) []string { return []string{"CUDA_HOME=" + root + "/usr/local/cuda-13.0"} },
			want: want{"13.0", "usr/local/cuda-13.0", "11.8", "usr/local/cuda-11.8/include"},
		},
		{
			name: "13 with NVIDIA's cuda-driver-dev-12-8 beside it",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
				fakeToolkit(t, root, "usr/local/cuda-12.8/targets/x86_64-linux", 12080, false)
			},
			vars: func(root string) []string { return []string{"CUDA_HOME=" + root + "/usr/local/cuda-13.0"} },
			want: want{"13.0", "usr/local/cuda-13.0", "12.8", "usr/local/cuda-12.8/targets/x86_64-linux/include"},
		},
		{
			name: "13 with setup's 11.8 headers beside it",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
				fakeToolkit(t, root, "opt/cudalessons/cuda-11.8", 11080, false)
			},
			vars: func(root string) []string { return []string{"CUDA_HOME=" + root + "/usr/local/cuda-13.0"} },
			want: want{"13.0", "usr/local/cuda-13.0", "11.8", "opt/cudalessons/cuda-11.8/include"},
		},
		{
			// gorgonia.org/cu's own -I/usr/local/cuda/include comes before /usr/include, where a
			// system folder given with -I stays: the compiler would read CUDA 13's cuda.h.
			name: "Debian's 11.8 under a CUDA 13 at /usr/local/cuda",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda", 13000, true)
				write(t, filepath.Join(root, "usr/include/cuda.h"), "#define CUDA_VERSION 11080\n")
				write(t, filepath.Join(root, "usr/include/nvrtc.h"), "")
				write(t, filepath.Join(root, "usr/include/cuda_fp16.h"), "")
				write(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvrtc.so"), "")
			},
			want:  want{nvrtc: "13.0", nvrtcDir: "usr/local/cuda"},
			shown: "found only: " + "ROOT/usr/local/cuda/include (CUDA 13.0)",
		},
		{
			name: "Debian's 11.8 alone",
			setup: func(root string) {
				write(t, filepath.Join(root, "usr/include/cuda.h"), "#define CUDA_VERSION 11080\n")
				write(t, filepath.Join(root, "usr/include/nvrtc.h"), "")
				write(t, filepath.Join(root, "usr/include/cuda_fp16.h"), "")
				write(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvrtc.so"), "")
			},
			want: want{"11.8", "usr/lib/x86_64-linux-gnu", "11.8", "usr/include"},
		},
		{
			name: "CUDA_NVRTC_HOME chooses an older NVRTC (a Volta GPU)",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-12.6", 12060, true)
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
			},
			vars: func(root string) []string { return []string{"CUDA_NVRTC_HOME=" + root + "/usr/local/cuda-12.6"} },
			want: want{"12.6", "usr/local/cuda-12.6", "12.6", "usr/local/cuda-12.6/include"},
		},
		{
			name: "CUDA_CGO_INCLUDE naming CUDA 13 headers is refused",
			setup: func(root string) {
				fakeToolkit(t, root, "usr/local/cuda-12.6", 12060, true)
				fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
			},
			vars: func(root string) []string {
				return []string{"CUDA_CGO_INCLUDE=" + root + "/usr/local/cuda-13.0/include"}
			},
			want:  want{nvrtc: "13.0", nvrtcDir: "usr/local/cuda-13.0"},
			shown: "found only: ROOT/usr/local/cuda-13.0/include (CUDA 13.0)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(root)
			var vars []string
			if c.vars != nil {
				vars = c.vars(root)
			}
			s := sourceEnv(t, root, vars...)
			rel := func(p string) string {
				if p == "" {
					return ""
				}
				return strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
			}
			nvrtcDir := strings.TrimSuffix(strings.TrimSuffix(rel(s.NVRTCLib), "/lib64"), "/include")
			got := want{s.NVRTC, nvrtcDir, s.CGO, rel(s.CGOInclude)}
			if got != c.want {
				t.Errorf("selected %+v, want %+v\nenv.sh said:\n%s", got, c.want, s.Shown)
			}
			if c.shown != "" && !strings.Contains(s.Shown, strings.ReplaceAll(c.shown, "ROOT", root)) {
				t.Errorf("cuda_env_show does not say %q:\n%s", c.shown, s.Shown)
			}
			if s.CGOInclude != "" && !strings.HasPrefix(s.CFlags, "-O2 -g -I"+s.CGOInclude) {
				t.Errorf("CGO_CFLAGS = %q: the chosen cuda.h folder must come first", s.CFlags)
			}
			if s.NVRTCLib != "" {
				if !strings.Contains(s.LDFlags, "-L"+s.NVRTCLib+" ") && !strings.HasSuffix(s.LDFlags, "-L"+s.NVRTCLib) {
					t.Errorf("CGO_LDFLAGS = %q lacks NVRTC's folder", s.LDFlags)
				}
				if !strings.Contains(s.LDFlags, "-Wl,-rpath,"+s.NVRTCLib) || !strings.HasPrefix(s.LibraryPath, s.NVRTCLib) {
					t.Errorf("NVRTC's folder is not the rpath (%q) or first in LD_LIBRARY_PATH (%q)", s.LDFlags, s.LibraryPath)
				}
			}
		})
	}
}

// With 12.8 headers that lack nvrtc.h (NVIDIA's cuda-driver-dev), nvrtc.h comes from NVRTC's own
// folder, searched after every other one so that its CUDA 13 cuda.h is never read.
func TestEnvScriptTakesNVRTCHeaderLast(t *testing.T) {
	root := t.TempDir()
	fakeToolkit(t, root, "usr/local/cuda-13.0", 13000, true)
	fakeToolkit(t, root, "usr/local/cuda-12.8/targets/x86_64-linux", 12080, false)
	s := sourceEnv(t, root)
	want := "-O2 -g -I" + root + "/usr/local/cuda-12.8/targets/x86_64-linux/include -idirafter " + root + "/usr/local/cuda-13.0/include"
	if s.CFlags != want {
		t.Errorf("CGO_CFLAGS = %q, want %q", s.CFlags, want)
	}
}

package compile

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These tests run the project's setup script (.ci/setup.sh) as a reader would, in a fake system:
// CUDA_ENV_ROOT puts a temporary folder in front of every fixed path it reads or writes
// (/etc/os-release, /usr/local/cuda*, /usr/local/go, /usr/local/bin, /opt), HOME is a temporary
// folder, and PATH holds only small shell scripts standing in for apt-get, apt-cache, jupyter, go,
// gonb, curl, nvidia-smi and sudo, each writing its arguments to a log, beside the ordinary tools
// the script needs. The tests assert what setup would install and run.

// setupRig is one fake system for a run of setup.sh.
type setupRig struct {
	dir, root, home, stubs, conf, log string
}

// stubScripts are the commands that stand in for the system's. Each logs "name args..." to
// $STUB_LOG; $STUB_CONF holds what the test configured (available packages, a .deb's content).
var stubScripts = map[string]string{
	"apt-get": `
case "$1" in
install)
  for p in "$@"; do
    case "$p" in
    cuda-driver-dev-12-*) # NVIDIA's package: cuda.h in /usr/local/cuda-12.x/targets/<arch>-linux
      d=$CUDA_ENV_ROOT/usr/local/cuda-12.${p#cuda-driver-dev-12-}/targets/x86_64-linux/include
      mkdir -p "$d" && echo "#define CUDA_VERSION 120${p#cuda-driver-dev-12-}0" >"$d/cuda.h" ;;
    nvidia-cuda-dev) # Debian's: CUDA 11.8 in /usr/include, libnvrtc in /usr/lib/<arch>
      mkdir -p "$CUDA_ENV_ROOT/usr/include" "$CUDA_ENV_ROOT/usr/lib/x86_64-linux-gnu"
      echo "#define CUDA_VERSION 11080" >"$CUDA_ENV_ROOT/usr/include/cuda.h"
      : >"$CUDA_ENV_ROOT/usr/include/nvrtc.h"; : >"$CUDA_ENV_ROOT/usr/include/cuda_fp16.h"
      : >"$CUDA_ENV_ROOT/usr/lib/x86_64-linux-gnu/libnvrtc.so" ;;
    nvidia-cuda-toolkit) # Debian's: nvdisasm and the other command-line tools in /usr/bin
      mkdir -p "$CUDA_ENV_ROOT/usr/bin" && printf '#!/bin/sh\n' >"$CUDA_ENV_ROOT/usr/bin/nvdisasm"
      chmod +x "$CUDA_ENV_ROOT/usr/bin/nvdisasm" ;;
    esac
  done ;;
download) : >"nvidia-cuda-dev_11.5.1~11.5.1-1ubuntu1_amd64.deb" ;;
esac`,
	"apt-cache": `
case "$1" in
pkgnames) grep "^$2" "$STUB_CONF/available" 2>/dev/null || true ;;
show) grep -qx "$2" "$STUB_CONF/available" 2>/dev/null ;;
esac`,
	"dpkg-deb": `[ "$1" = --fsys-tarfile ] && tar -c -C "$STUB_CONF/deb" ./usr/include`,
	"jupyter": `
data=${JUPYTER_DATA_DIR:-$HOME/.local/share/jupyter}
case "$1" in
--version) echo "jupyter_core     : 5.7.2" ;;
--data-dir) echo "$data" ;;
kernelspec)
  [ "$2" = list ] || exit 2
  echo "Available kernels:"
  for d in "$data"/kernels/*/; do [ -f "$d/kernel.json" ] && printf '  %s    %s\n' "$(basename "$d")" "${d%/}"; done
  echo "  python3    /usr/local/share/jupyter/kernels/python3" ;;
*) exit 2 ;;
esac`,
	"go": `
gopath=$HOME/go
case "$1" in
env) case "$2" in GOVERSION) echo go1.26.8 ;; GOPATH) echo "$gopath" ;; esac ;;
list) echo v0.11.4 ;;
install)
  mkdir -p "$gopath/bin"
  case "$2" in
  github.com/janpfeifer/gonb) cp "$STUB_CONF/gonb" "$gopath/bin/gonb" ;;
  *) printf '#!/bin/sh\n' >"$gopath/bin/${2##*/}"; chmod +x "$gopath/bin/${2##*/}" ;;
  esac ;;
esac`,
	"curl":       `cat "$STUB_CONF/go.tar.gz"`,
	"nvidia-smi": `[ -f "$STUB_CONF/gpu" ] && echo "GPU 0: Tesla T4 (UUID: GPU-00000000-0000-0000-0000-000000000000)"`,
	"sudo":       `exec "$@"`,
}

// gonbStub is what the stub go "builds" for GoNB: --install writes the kernel's registration where
// GoNB writes it ($JUPYTER_DATA_DIR, else ~/.local/share/jupyter), naming itself as the kernel.
const gonbStub = `
if [ "$1" = --install ]; then
  d=${JUPYTER_DATA_DIR:-$HOME/.local/share/jupyter}/kernels/gonb
  mkdir -p "$d"
  printf '{"argv":["%s","--kernel","{connection_file}"],"display_name":"Go (gonb)","language":"go","interrupt_mode":"message","env":{}}\n' "$0" >"$d/kernel.json"
fi`

// The ordinary tools setup.sh, env.sh, mode.sh and the stubs use, from the system. Those that write
// (setupWriters) are reached through a guard that refuses any absolute path outside the rig's
// folder, so that a setup.sh that forgot CUDA_ENV_ROOT somewhere fails the test instead of writing
// to this machine's /usr/local or /etc.
var (
	setupTools = []string{"bash", "sh", "env", "sed", "grep", "sort", "head", "tail", "cat", "mktemp",
		"gzip", "dirname", "basename", "id", "awk", "readlink", "tr", "cut", "ls", "uname"}
	setupWriters = []string{"mkdir", "rm", "cp", "ln", "tar", "tee", "touch", "chmod", "mv", "python3"}
)

const writeGuard = `#!/bin/bash
for a in "$@"; do
  case "$a" in
  /dev/null | "$STUB_RIG" | "$STUB_RIG"/*) ;;
  /*) printf 'REFUSED %%s %%s\n' "$(basename "$0")" "$a" >>"$STUB_LOG"
      echo "setup test: $(basename "$0") refused $a, outside the fake system" >&2; exit 1 ;;
  esac
done
exec %s "$@"
`

func newSetupRig(t *testing.T) *setupRig {
	t.Helper()
	dir := t.TempDir()
	r := &setupRig{
		dir:   dir,
		root:  filepath.Join(dir, "root"),
		home:  filepath.Join(dir, "home"),
		stubs: filepath.Join(dir, "stubs"),
		conf:  filepath.Join(dir, "conf"),
		log:   filepath.Join(dir, "calls.log"),
	}
	for _, d := range []string{r.root, r.home, r.stubs, r.conf, filepath.Join(dir, "tools"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(setupTools, setupWriters...) {
		path := ""
		for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
				path = filepath.Join(d, name)
				break
			}
		}
		if path == "" {
			t.Skipf("%s is not installed here", name)
		}
		tool := filepath.Join(dir, "tools", name)
		if slices.Contains(setupWriters, name) {
			write(t, tool, fmt.Sprintf(writeGuard, path))
			err := os.Chmod(tool, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink(path, tool); err != nil {
			t.Fatal(err)
		}
	}
	r.script(t, filepath.Join(r.conf, "gonb"), gonbStub)
	return r
}

// script writes an executable bash script that logs its name and arguments, then runs body.
func (r *setupRig) script(t *testing.T, path, body string) {
	t.Helper()
	text := "#!/bin/bash\nprintf '%s\\n' \"$(basename \"$0\") $*\" >>\"$STUB_LOG\"\n" + body + "\n"
	write(t, path, text)
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// stub puts the named stand-ins on PATH.
func (r *setupRig) stub(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		body, ok := stubScripts[name]
		if !ok {
			t.Fatalf("no stub %q", name)
		}
		r.script(t, filepath.Join(r.stubs, name), body)
	}
}

// osRelease writes the fake /etc/os-release.
func (r *setupRig) osRelease(t *testing.T, text string) {
	t.Helper()
	write(t, filepath.Join(r.root, "etc/os-release"), text)
}

const (
	ubuntu2204 = "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=jammy\n"
	bookworm   = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\nVERSION_CODENAME=bookworm\n"
	colabTag   = "release-colab_20250101-060000_RC00"
)

// colabToolkit writes a CUDA toolkit where Colab has it: /usr/local/cuda-<v>, with /usr/local/cuda a
// link to it.
func (r *setupRig) colabToolkit(t *testing.T, dir string, version int) {
	t.Helper()
	fakeToolkit(t, r.root, "usr/local/"+dir, version, true)
	if err := os.Symlink(dir, filepath.Join(r.root, "usr/local/cuda")); err != nil {
		t.Fatal(err)
	}
}

// goTarball makes the archive the stub curl serves for go.dev/dl: go/bin/go (the stub go) and gofmt.
func (r *setupRig) goTarball(t *testing.T) {
	t.Helper()
	stub := filepath.Join(r.conf, "gostub")
	r.script(t, stub, stubScripts["go"])
	goText, err := os.ReadFile(stub)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(r.conf, "go.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, e := range []struct {
		name string
		text []byte
	}{{"go/bin/go", goText}, {"go/bin/gofmt", []byte("#!/bin/sh\n")}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o755, Size: int64(len(e.text)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.text); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// setupResult is what a run printed, the stubs' log, and its error.
type setupResult struct {
	out   string
	calls []string
	err   error
}

// run runs .ci/setup.sh in the rig with a clean environment and the given variables.
func (r *setupRig) run(t *testing.T, vars ...string) setupResult {
	t.Helper()
	script, err := filepath.Abs("../../.ci/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(r.dir, "tools", "bash"), script)
	cmd.Dir = r.dir
	cmd.Env = append([]string{
		"PATH=" + r.stubs + ":" + filepath.Join(r.dir, "tools"),
		"HOME=" + r.home,
		"TMPDIR=" + filepath.Join(r.dir, "tmp"),
		"CUDA_ENV_ROOT=" + r.root,
		"STUB_RIG=" + r.dir,
		"STUB_LOG=" + r.log,
		"STUB_CONF=" + r.conf,
	}, vars...)
	out, err := cmd.CombinedOutput()
	res := setupResult{out: string(out), err: err}
	if b, err := os.ReadFile(r.log); err == nil {
		res.calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if res.called("REFUSED") {
		t.Errorf("setup tried to write outside the fake system\n%s", res)
	}
	return res
}

// installs returns the packages of every apt-get install in the log.
func (s setupResult) installs() []string {
	var pkgs []string
	for _, c := range s.calls {
		f := strings.Fields(c)
		if len(f) < 2 || f[0] != "apt-get" || f[1] != "install" {
			continue
		}
		for _, a := range f[2:] {
			if !strings.HasPrefix(a, "-") {
				pkgs = append(pkgs, a)
			}
		}
	}
	return pkgs
}

// called reports whether a logged call starts with prefix.
func (s setupResult) called(prefix string) bool {
	for _, c := range s.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func (s setupResult) String() string {
	return "setup printed:\n" + s.out + "\ncalls:\n  " + strings.Join(s.calls, "\n  ")
}

// kernelSpec reads the gonb kernel's registration where Jupyter's user data folder has it.
func (r *setupRig) kernelSpec(t *testing.T) (argv []string, env map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.home, ".local/share/jupyter/kernels/gonb/kernel.json"))
	if err != nil {
		t.Fatalf("no kernel registered: %v", err)
	}
	var spec struct {
		Argv []string          `json:"argv"`
		Env  map[string]string `json:"env"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("kernel.json: %v\n%s", err, b)
	}
	return spec.Argv, spec.Env
}

// checkColabKernel asserts what every Colab run ends with: the kernel registered for Colab's
// Jupyter, carrying the environment env.sh picked, and the tools linked into /usr/local/bin.
func (r *setupRig) checkColabKernel(t *testing.T, res setupResult, nvrtc, cgo, cgoInclude string) map[string]string {
	t.Helper()
	if !res.called("gonb --install") {
		t.Errorf("GoNB's --install was not run\n%s", res)
	}
	argv, env := r.kernelSpec(t)
	if len(argv) == 0 || argv[0] != filepath.Join(r.home, "go/bin/gonb") {
		t.Errorf("kernel argv = %q, want the gonb setup built", argv)
	}
	if env["KERNELS_NVRTC_CUDA"] != nvrtc || env["KERNELS_CGO_CUDA"] != cgo {
		t.Errorf("kernel env has NVRTC %q and cgo headers %q, want %s and %s: %v", env["KERNELS_NVRTC_CUDA"], env["KERNELS_CGO_CUDA"], nvrtc, cgo, env)
	}
	if want := "-O2 -g -I" + filepath.Join(r.root, cgoInclude); !strings.HasPrefix(env["CGO_CFLAGS"], want) {
		t.Errorf("kernel env CGO_CFLAGS = %q, want it to start with %q", env["CGO_CFLAGS"], want)
	}
	if !strings.HasPrefix(env["LD_LIBRARY_PATH"], env["KERNELS_NVRTC_LIBDIR"]) || env["KERNELS_NVRTC_LIBDIR"] == "" {
		t.Errorf("kernel env LD_LIBRARY_PATH = %q does not start with NVRTC's folder %q", env["LD_LIBRARY_PATH"], env["KERNELS_NVRTC_LIBDIR"])
	}
	if p := ":" + env["PATH"] + ":"; !strings.Contains(p, ":"+filepath.Join(r.home, "go/bin")+":") {
		t.Errorf("kernel env PATH = %q lacks the folder of gonb, goimports and gopls", env["PATH"])
	}
	for _, tool := range []string{"go", "gonb", "goimports", "gopls"} {
		if _, err := os.Stat(filepath.Join(r.root, "usr/local/bin", tool)); err != nil {
			t.Errorf("%s is not linked into /usr/local/bin: %v", tool, err)
		}
	}
	for _, want := range []string{"Google Colab (" + colabTag + "): taking the Colab route", "using Colab's Jupyter",
		"Go (gonb) kernel is registered with Colab's Jupyter", "Colab: no Chromium"} {
		if !strings.Contains(res.out, want) {
			t.Errorf("setup does not say %q\n%s", want, res)
		}
	}
	if os.Geteuid() == 0 && res.called("sudo") {
		t.Errorf("setup used sudo as root\n%s", res)
	}
	return env
}

// Colab as it is: Ubuntu 22.04, a T4, CUDA 12.x in /usr/local/cuda, pip's Jupyter (only `jupyter`
// on PATH, no jupyter-notebook or jupyter-nbconvert scripts), no Go.
func TestSetupColab(t *testing.T) {
	r := newSetupRig(t)
	r.osRelease(t, ubuntu2204)
	r.colabToolkit(t, "cuda-12.5", 12050)
	r.stub(t, "apt-get", "apt-cache", "jupyter", "curl", "nvidia-smi", "sudo")
	r.goTarball(t)
	write(t, filepath.Join(r.conf, "gpu"), "")
	res := r.run(t, "COLAB_RELEASE_TAG="+colabTag, "COLAB_GPU=1")
	if res.err != nil {
		t.Fatalf("setup failed: %v\n%s", res.err, res)
	}
	if pkgs := res.installs(); len(pkgs) > 0 || res.called("apt-get") {
		t.Errorf("setup ran apt-get on Colab (installing %q); it should install nothing from apt\n%s", pkgs, res)
	}
	if !res.called("curl -fsSL https://go.dev/dl/go1.26") {
		t.Errorf("Go was not downloaded\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(r.root, "usr/local/go/bin/go")); err != nil {
		t.Errorf("Go is not in /usr/local/go: %v", err)
	}
	env := r.checkColabKernel(t, res, "12.5", "12.5", "usr/local/cuda/include")
	if strings.Contains(env["GOFLAGS"], "nocuda") {
		t.Errorf("GOFLAGS = %q in the kernel's env with a GPU present", env["GOFLAGS"])
	}
	if !strings.Contains(":"+env["PATH"]+":", ":"+filepath.Join(r.root, "usr/local/go/bin")+":") {
		t.Errorf("kernel env PATH = %q lacks the Go setup installed", env["PATH"])
	}
	if !strings.Contains(res.out, "ready: mode gpu") {
		t.Errorf("setup does not end in GPU mode\n%s", res)
	}
}

// A Colab runtime without a GPU: the kernel builds every cell with -tags=nocuda, as .ci/jupyter.sh
// does elsewhere.
func TestSetupColabWithoutGPU(t *testing.T) {
	r := newSetupRig(t)
	r.osRelease(t, ubuntu2204)
	r.colabToolkit(t, "cuda-12.5", 12050)
	r.stub(t, "apt-get", "apt-cache", "jupyter", "curl", "nvidia-smi", "sudo")
	r.goTarball(t)
	res := r.run(t, "COLAB_RELEASE_TAG="+colabTag, "COLAB_GPU=0")
	if res.err != nil {
		t.Fatalf("setup failed: %v\n%s", res.err, res)
	}
	env := r.checkColabKernel(t, res, "12.5", "12.5", "usr/local/cuda/include")
	if env["GOFLAGS"] != "-tags=nocuda" {
		t.Errorf("kernel env GOFLAGS = %q, want -tags=nocuda without a GPU", env["GOFLAGS"])
	}
}

// A Colab image with CUDA 13 only: NVRTC 13 stays, and 12.x headers go beside it for cgo, from
// NVIDIA's repository when it is configured, else from Ubuntu's nvidia-cuda-dev (its include folder
// only: its libcuda1 must not replace the driver).
func TestSetupColabCUDA13(t *testing.T) {
	t.Run("NVIDIA's repository", func(t *testing.T) {
		r := newSetupRig(t)
		r.osRelease(t, ubuntu2204)
		r.colabToolkit(t, "cuda-13.0", 13000)
		r.stub(t, "apt-get", "apt-cache", "jupyter", "go", "nvidia-smi", "sudo")
		write(t, filepath.Join(r.conf, "available"), "cuda-driver-dev-12-8\ncuda-driver-dev-12-9\ncuda-driver-dev-13-0\ncuda-toolkit-13-0\nnvidia-cuda-dev\n")
		write(t, filepath.Join(r.conf, "gpu"), "")
		res := r.run(t, "COLAB_RELEASE_TAG="+colabTag)
		if res.err != nil {
			t.Fatalf("setup failed: %v\n%s", res.err, res)
		}
		if pkgs := res.installs(); strings.Join(pkgs, " ") != "cuda-driver-dev-12-9" {
			t.Errorf("apt-get installed %q, want only cuda-driver-dev-12-9\n%s", pkgs, res)
		}
		r.checkColabKernel(t, res, "13.0", "12.9", "usr/local/cuda-12.9/targets/x86_64-linux/include")
	})
	t.Run("Ubuntu's nvidia-cuda-dev", func(t *testing.T) {
		r := newSetupRig(t)
		r.osRelease(t, ubuntu2204)
		r.colabToolkit(t, "cuda-13.0", 13000)
		r.stub(t, "apt-get", "apt-cache", "dpkg-deb", "jupyter", "go", "nvidia-smi", "sudo")
		write(t, filepath.Join(r.conf, "available"), "nvidia-cuda-dev\n")
		write(t, filepath.Join(r.conf, "deb/usr/include/cuda.h"), "#define CUDA_VERSION 11050\n")
		write(t, filepath.Join(r.conf, "gpu"), "")
		res := r.run(t, "COLAB_RELEASE_TAG="+colabTag)
		if res.err != nil {
			t.Fatalf("setup failed: %v\n%s", res.err, res)
		}
		if pkgs := res.installs(); len(pkgs) > 0 {
			t.Errorf("apt-get installed %q; only nvidia-cuda-dev's headers should be taken\n%s", pkgs, res)
		}
		if !res.called("apt-get download nvidia-cuda-dev") {
			t.Errorf("nvidia-cuda-dev was not downloaded\n%s", res)
		}
		r.checkColabKernel(t, res, "13.0", "11.5", "opt/cudalessons/cuda-11.5/include")
	})
}

// On Colab, setup never installs a Jupyter of its own: Colab would not use it.
func TestSetupColabWithoutJupyter(t *testing.T) {
	r := newSetupRig(t)
	r.osRelease(t, ubuntu2204)
	r.colabToolkit(t, "cuda-12.5", 12050)
	r.stub(t, "apt-get", "apt-cache", "go", "sudo")
	res := r.run(t, "COLAB_RELEASE_TAG="+colabTag)
	if res.err == nil {
		t.Fatalf("setup succeeded on Colab with no jupyter\n%s", res)
	}
	if pkgs := res.installs(); len(pkgs) > 0 {
		t.Errorf("apt-get installed %q\n%s", pkgs, res)
	}
	if !strings.Contains(res.out, "Colab: no working jupyter on PATH") {
		t.Errorf("setup does not say why it stopped\n%s", res)
	}
}

// Debian without CUDA and with only a pip `jupyter` is what it was: Debian's CUDA 11.8 from non-free
// (and its nvidia-cuda-toolkit for nvdisasm, which the SASS views run), Debian's Jupyter, Chromium and JupyterHub, the kernel registered as GoNB writes it, nothing of the
// Colab route.
func TestSetupDebian(t *testing.T) {
	r := newSetupRig(t)
	r.osRelease(t, bookworm)
	r.stub(t, "apt-get", "apt-cache", "jupyter", "go", "sudo")
	res := r.run(t)
	if res.err != nil {
		t.Fatalf("setup failed: %v\n%s", res.err, res)
	}
	want := "nvidia-cuda-dev libnvrtc11.2 libnvrtc-builtins11.8 libcuda1 nvidia-cuda-toolkit jupyter-notebook jupyter-nbconvert jupyter-client python3-nbclient python3-ipykernel chromium jupyterhub python3-yaml"
	if got := strings.Join(res.installs(), " "); got != want {
		t.Errorf("apt-get installed\n  %s\nwant\n  %s\n%s", got, want, res)
	}
	if _, err := os.Stat(filepath.Join(r.root, "etc/apt/sources.list.d/cuda-nonfree.sources")); err != nil {
		t.Errorf("Debian's non-free was not enabled: %v", err)
	}
	if strings.Contains(res.out, "Colab") {
		t.Errorf("setup took the Colab route on Debian\n%s", res)
	}
	if _, env := r.kernelSpec(t); len(env) > 0 {
		t.Errorf("the kernel's registration got an env outside Colab: %v", env)
	}
	if _, err := os.Lstat(filepath.Join(r.root, "usr/local/bin/gonb")); err == nil {
		t.Errorf("gonb was linked into /usr/local/bin outside Colab")
	}
	if !strings.Contains(res.out, "ready: mode nogpu") {
		t.Errorf("setup does not end in no-GPU mode\n%s", res)
	}
}

// Debian with a CUDA 13 toolkit that lacks nvdisasm: setup names the toolkit's package and installs
// nothing of the distribution's CUDA (its libcuda1 would sit beside the toolkit's driver).
func TestSetupDebianToolkitWithoutNvdisasm(t *testing.T) {
	r := newSetupRig(t)
	r.osRelease(t, bookworm)
	r.colabToolkit(t, "cuda-13.0", 13000)
	r.stub(t, "apt-get", "apt-cache", "jupyter", "go", "sudo")
	write(t, filepath.Join(r.conf, "available"), "cuda-driver-dev-12-9\n")
	res := r.run(t, "KERNELS_COLAB=0")
	if res.err != nil {
		t.Fatalf("setup failed: %v\n%s", res.err, res)
	}
	for _, p := range res.installs() {
		if p == "nvidia-cuda-toolkit" || p == "nvidia-cuda-dev" {
			t.Errorf("apt-get installed %s beside a CUDA toolkit\n%s", p, res)
		}
	}
	if !strings.Contains(res.out, "install that toolkit's cuda-nvdisasm package") {
		t.Errorf("setup does not say how to get nvdisasm\n%s", res)
	}
}

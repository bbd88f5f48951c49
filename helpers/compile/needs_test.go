package compile

import (
	"strings"
	"testing"
)

const needy = `// Step 9: a test source.
// Needs: compute capability 8.0 (cp.async).
// Needs: compute capability 9.0 with CLUSTER (thread block clusters).
extern "C" __global__ void k(float *x) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n");
#endif
    x[threadIdx.x] = 1.f;
}
`

func TestNeedsAreReadFromTheHeader(t *testing.T) {
	if n := Needs(needy); len(n) != 2 || n[0] != (Need{CC: 80, Why: "cp.async"}) || n[1] != (Need{CC: 90, Why: "thread block clusters", With: "CLUSTER"}) {
		t.Errorf("Needs = %+v", n)
	}
	if r := Required(needy, nil); r.CC != 80 {
		t.Errorf("without CLUSTER: %+v", r)
	}
	if r := Required(needy, []string{"CLUSTER=4", "VECS=4"}); r.CC != 90 || r.String() != "compute capability 9.0 (thread block clusters)" {
		t.Errorf("with CLUSTER=4: %+v", r)
	}
	if r := Required("// needs nothing\nextern \"C\" __global__ void k() {}", nil); r.CC != 0 || r.String() != "any GPU" {
		t.Errorf("no declaration: %+v", r)
	}
	hopper := "// Needs: compute capability 9.0a (wgmma: Hopper only).\n"
	if n := Required(hopper, nil); n != (Need{CC: 90, Exact: true, Why: "wgmma: Hopper only"}) ||
		n.String() != "compute capability 9.0 exactly, compiled for compute_90a (wgmma: Hopper only)" {
		t.Errorf("the Hopper-only need: %+v %q", n, n.String())
	}
	src := Source{Name: "h.cu", Code: hopper}
	for arch, refused := range map[string]bool{"compute_90a": false, "compute_90": true, "compute_100a": true, "compute_120": true, "compute_80": true} {
		if err := Fits(src, Options{Arch: arch}); (err != nil) != refused {
			t.Errorf("a Hopper-only source for %s: %v", arch, err)
		}
	}
	for arch, cc := range map[string]int{"compute_75": 75, "sm_90": 90, "compute_90a": 90, "compute_100": 100, "sm_x": 0} {
		if got := ArchCC(arch); got != cc {
			t.Errorf("ArchCC(%q) = %d, want %d", arch, got, cc)
		}
	}
}

// Below its need a source is refused before NVRTC runs (PTX and Assemble alike), naming the need;
// at it, Assemble takes compute_XX and sm_XX names and ptxas accepts the source.
func TestBelowTheNeedIsRefused(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	src := Source{Name: "needy.cu", Code: needy}
	for _, err := range []error{
		func() error { _, err := PTX(src, Options{Arch: "compute_75"}); return err }(),
		func() error { _, err := Assemble(src, Options{Arch: "sm_75"}); return err }(),
		func() error {
			_, err := Assemble(src, Options{Arch: "sm_80", Defines: []string{"CLUSTER"}})
			return err
		}(),
	} {
		ne, ok := IsNeed(err)
		if !ok || !strings.Contains(err.Error(), "needy.cu needs compute capability") {
			t.Errorf("want a refusal naming the need, got %v", err)
			continue
		}
		if ne.Name != "needy.cu" {
			t.Errorf("refusal of %q", ne.Name)
		}
	}
	for _, arch := range []string{"sm_80", "compute_80", "sm_90"} {
		if log, err := Assemble(src, Options{Arch: arch}); err != nil {
			t.Errorf("%s: %v\n%s", arch, err, log)
		}
	}
}

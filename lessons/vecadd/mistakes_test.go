package vecadd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
)

// mistakeEnv, set to the name of one of notebook 09's kernels, makes the test binary act as that
// notebook's cell: it runs the kernel through Try (or Sanitize with the tool in mistakeToolEnv), as
// lab.Cell does, and exits. The GPU test runs each mistake so, in a child process of its own.
const (
	mistakeEnv     = "VECADD_TEST_MISTAKE"
	mistakeToolEnv = "VECADD_TEST_MISTAKE_TOOL"
)

func TestMain(m *testing.M) {
	if ran, status := labtest.ProfileCell(profileEnv, profileTrial); ran {
		os.Exit(status)
	}
	if name := os.Getenv(mistakeEnv); name != "" {
		code, err := mistakeSource(name)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		tool := os.Getenv(mistakeToolEnv)
		lab.Cell(func(env *lab.Env) error {
			if tool != "" {
				return Sanitize(env, "naive", code, tool)
			}
			return Try(env, "naive", code)
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mistakesNotebook holds the kernels of the mistakes, each a Go raw string named in a var.
const mistakesNotebook = "../../notebooks/09_mistakes.ipynb"

var rawVar = regexp.MustCompile("var (\\w+) = `([^`]*)`")

// mistakeSource is the kernel the mistakes notebook keeps in the var name: the tests run what the
// notebook runs.
func mistakeSource(name string) (string, error) {
	data, err := os.ReadFile(mistakesNotebook)
	if err != nil {
		return "", err
	}
	var nb struct {
		Cells []struct {
			Source []string `json:"source"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(mistakesNotebook), err)
	}
	for _, c := range nb.Cells {
		src := ""
		for _, l := range c.Source {
			src += l
		}
		for _, m := range rawVar.FindAllStringSubmatch(src, -1) {
			if m[1] == name {
				return m[2], nil
			}
		}
	}
	return "", fmt.Errorf("%s has no var %s", filepath.Base(mistakesNotebook), name)
}

// mistakeCase is one of notebook 09's mistakes as the GPU test runs it: the var holding its kernel,
// the sanitizer tool ("" for Try), the exit status of its cell's process and what its output says.
type mistakeCase struct {
	name, tool string
	exit       int
	want       []string
}

var mistakeCases = []mistakeCase{
	{"strideZero", "", watchdog.ExitCode, []string{"Your naive did not finish", "its deadline", "Still running: kernel add_naive (grid", "grid-stride loop whose stride is 0"}},
	{"hugeShared", "", 0, []string{"kernel add_naive cannot run", "400000 bytes (390.6 KiB) of static shared memory", "49152 bytes (48 KiB)", "233472 bytes (228 KiB) per SM"}},
	{"nullRead", "", 0, []string{"Your naive faulted on the GPU: an illegal memory address", "in kernel add_naive (grid", "context is lost", "replace Try with Sanitize"}},
	{"pastTheEnd", "memcheck", 0, []string{"compute-sanitizer memcheck found", "Invalid __global__", "in kernel add_naive", "line 5", "by thread"}},
	{"onePast", "memcheck", 0, []string{"compute-sanitizer memcheck found", "Invalid __global__ read", "line 5"}},
	{"sharedRace", "racecheck", 0, []string{"compute-sanitizer racecheck found"}},
	{"divergentBarrier", "synccheck", 0, []string{"compute-sanitizer synccheck"}},
	{"missingSemicolon", "", 0, []string{`error: expected a ";"`, "1_naive.cu, line 4:"}},
	{"wrongName", "", 0, []string{`kernel "add_naive" not found in the module`}},
}

// Every kernel the GPU test of the mistakes runs is in the notebook.
func TestMistakesAreInTheNotebook(t *testing.T) {
	for _, c := range mistakeCases {
		if _, err := mistakeSource(c.name); err != nil {
			t.Error(err)
		}
	}
}

package vecadd

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cudalessons/cudalessons/helpers/lab"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// profileEnv, set to a file name, makes the test binary act as a notebook's Profile cell on the
// float4 step with a reader's copy of its kernel: it writes what ProfileTrial returns (the
// profiles, as JSON) or its error to that file and exits. Its children under ncu are this binary
// again, with the same variable, so they reach the same call. The GPU test runs it in a process of
// its own.
const profileEnv = "VECADD_TEST_PROFILE"

// profileCell is that cell: it returns the exit status.
func profileCell(out string) int {
	write := func(v any) int {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.WriteFile(out, b, 0o644)
		}
		if err != nil {
			fmt.Println(err)
			return 2
		}
		return 0
	}
	env, err := lab.Open()
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	defer env.Close()
	code, err := readersFloat4()
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	t, err := Trial(env, "float4")
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	f, err := env.ProfileTrial(t, code)
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	return write(f)
}

// readersFloat4 is the float4 kernel as a reader pastes it into a Try cell, with a comment of theirs.
func readersFloat4() (string, error) {
	s, err := StepByName("float4")
	if err != nil {
		return "", err
	}
	src, err := kv.Source(s.File)
	if err != nil {
		return "", err
	}
	return "// my copy of the float4 step\n" + src.Code, nil
}

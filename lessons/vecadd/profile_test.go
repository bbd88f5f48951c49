package vecadd

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// profileEnv, set to a file name, makes the test binary act as notebook 00's Profile cell: the
// naive step, then the float4 step with a reader's copy of its kernel: it writes what ProfileTrial returns (the
// profiles, as JSON) or its error to that file and exits. Its children under ncu are this binary
// again, with the same variable, so they reach the same call. The GPU test runs it in a process of
// its own.
const profileEnv = "VECADD_TEST_PROFILE"

// profileTrial is the naive step, then the float4 step with a reader's copy of its kernel
// (readersFloat4): the cell's second Profile call must find its own kernels, not the first's.
func profileTrial(env *lab.Env) ([]lab.Trial, string, error) {
	code, err := readersFloat4()
	if err != nil {
		return nil, "", err
	}
	var ts []lab.Trial
	for _, step := range []string{"naive", "float4"} { // as notebook 00's cell: naive, then float4
		t, err := Trial(env, step)
		if err != nil {
			return nil, "", err
		}
		ts = append(ts, t)
	}
	return ts, code, nil
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

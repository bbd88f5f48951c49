package matmul

import (
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// profileEnv, set to a file name, makes the test binary act as a notebook's Profile cell on step 7
// with a reader's copy of its kernel: it writes what ProfileTrial returns (the profiles, as JSON)
// or its error to that file and exits. Its children under ncu are this binary again, with the same
// variable, so they reach the same call. The GPU test runs it in a process of its own.
const profileEnv = "MATMUL_TEST_PROFILE"

func TestMain(m *testing.M) {
	if ran, status := labtest.ProfileCell(profileEnv, profileTrial); ran {
		os.Exit(status)
	}
	os.Exit(m.Run())
}

// profileTrial is step 7 with a reader's copy of its kernel (readersStep7).
func profileTrial(env *lab.Env) ([]lab.Trial, string, error) {
	code, err := readersStep7()
	if err != nil {
		return nil, "", err
	}
	t, err := Trial(env, "7")
	return []lab.Trial{t}, code, err
}

// readersStep7 is step 7's file as a reader pastes it into a cell, with a comment of theirs.
func readersStep7() (string, error) {
	st, err := StepByName("7")
	if err != nil {
		return "", err
	}
	src, err := st.Source("")
	if err != nil {
		return "", err
	}
	return "// my copy of step 7\n" + src.Code, nil
}

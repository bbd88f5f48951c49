package matmul

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// profileEnv, set to a file name, makes the test binary act as a notebook's Profile cell on step 7
// with a reader's copy of its kernel: it writes what ProfileTrial returns (the profiles, as JSON)
// or its error to that file and exits. Its children under ncu are this binary again, with the same
// variable, so they reach the same call. The GPU test runs it in a process of its own.
const profileEnv = "MATMUL_TEST_PROFILE"

func TestMain(m *testing.M) {
	if out := os.Getenv(profileEnv); out != "" {
		os.Exit(profileCell(out))
	}
	os.Exit(m.Run())
}

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
	fail := func(err error) int { return write(map[string]string{"error": err.Error()}) }
	env, err := lab.Open()
	if err != nil {
		return fail(err)
	}
	defer env.Close()
	code, err := readersStep7()
	if err != nil {
		return fail(err)
	}
	t, err := Trial(env, "7")
	if err != nil {
		return fail(err)
	}
	f, err := env.ProfileTrial(t, code)
	if err != nil {
		return fail(err)
	}
	return write(f)
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

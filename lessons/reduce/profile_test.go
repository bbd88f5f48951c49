package reduce

import (
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// profileEnv, set to a file name, makes the test binary act as the softmax notebook's Profile cell
// on the cluster step: it writes what ProfileTrial returns (the profile, as JSON) or its error to
// that file and exits. Its children under ncu are this binary again, with the same variable, so
// they reach the same call. The GPU test runs it in a process of its own.
const profileEnv = "REDUCE_TEST_PROFILE"

func TestMain(m *testing.M) {
	if ran, status := labtest.ProfileCell(profileEnv, profileTrial); ran {
		os.Exit(status)
	}
	os.Exit(m.Run())
}

// profileTrial is the cluster step as it is (no reader's code).
func profileTrial(env *lab.Env) ([]lab.Trial, string, error) {
	t, err := SoftmaxTrial(env, stepCluster)
	return []lab.Trial{t}, "", err
}

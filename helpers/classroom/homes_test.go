package classroom

import (
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// The current user stands for a student with an account: their folder is Folder in their home,
// whether or not it exists. A name with no account is an error naming the roster line.
func TestNotebookDirs(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	if me.HomeDir == "" {
		t.Skipf("the current user %s has no home folder", me.Username)
	}
	if !userName.MatchString(me.Username) {
		t.Skipf("the current user's name %q is not one a roster accepts", me.Username)
	}
	dirs, err := parse(t, "# the class\n"+me.Username+"\n").NotebookDirs()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(me.HomeDir, Folder)
	if len(dirs) != 1 || dirs[0].Student != me.Username || dirs[0].Dir != want {
		t.Errorf("dirs %+v, want %s in %s", dirs, me.Username, want)
	}

	_, err = parse(t, "# the class\n"+me.Username+"\n\nnosuchstudent-xyz 0\n").NotebookDirs()
	if err == nil || !strings.Contains(err.Error(), "students.txt:4: nosuchstudent-xyz has no system account") {
		t.Errorf("a student without an account: %v", err)
	}
	_, err = parse(t, "nosuchstudent-xyz\nnosuchstudent-abc\n").NotebookDirs()
	if err == nil || !strings.Contains(err.Error(), "students.txt:1: nosuchstudent-xyz") || !strings.Contains(err.Error(), "students.txt:2: nosuchstudent-abc") {
		t.Errorf("two students without an account: every one is not named: %v", err)
	}
}

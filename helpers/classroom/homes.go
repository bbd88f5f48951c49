package classroom

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
)

// NotebookDir is where one student's copy of the notebooks is: Folder in the home of their system
// account.
type NotebookDir struct {
	Student string // the student's user name, as the roster has it
	Dir     string // <home>/cudalessons; it may not exist (a student who never logged in)
}

// NotebookDirs returns the notebook folder of every student of the roster, in the roster's order.
// Each home is the one the system gives the account (os/user.Lookup), as the hub's spawner finds it.
// A student without a system account, or whose account has no home, is an error that names the
// student and the roster line; every such student is named, not only the first. A folder that does
// not exist is not an error here: the grader records that student as having handed in nothing.
func (r *Roster) NotebookDirs() ([]NotebookDir, error) {
	dirs := make([]NotebookDir, 0, len(r.Students))
	var errs []error
	for _, s := range r.Students {
		u, err := user.Lookup(s.Name)
		if err != nil {
			var unknown user.UnknownUserError
			if errors.As(err, &unknown) {
				err = fmt.Errorf("%s:%d: %s has no system account (create it with useradd -m %s, as the hub needs it too, or take the line out of the roster)", r.Path, s.Line, s.Name, s.Name)
			} else {
				err = fmt.Errorf("%s:%d: looking up %s's account: %w", r.Path, s.Line, s.Name, err)
			}
			errs = append(errs, err)
			continue
		}
		if u.HomeDir == "" {
			errs = append(errs, fmt.Errorf("%s:%d: %s's account has no home folder, so it has no %s folder of notebooks", r.Path, s.Line, s.Name, Folder))
			continue
		}
		dirs = append(dirs, NotebookDir{Student: s.Name, Dir: filepath.Join(u.HomeDir, Folder)})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("roster: %w", errors.Join(errs...))
	}
	return dirs, nil
}

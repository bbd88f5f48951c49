package notebooks

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/grade/gradetest"
	"github.com/cudalessons/cudalessons/lessons"
)

// The classroom hub's test accounts: real system accounts, made by the test and removed after it.
// eve has an account but is not on the roster.
var (
	hubStudents = []string{"clhub-ada", "clhub-bo", "clhub-cy"}
	hubOutsider = "clhub-eve"
)

// classroom is the hub under test: its process, its folder and its students' passwords.
type classroom struct {
	s        suite
	dir      string // HUB_DIR
	roster   string
	env      []string // the hub's environment: ports, roster, HUB_DIR
	url      string
	out      string // the test's folder for logs, executed copies and the gradebook
	starts   int    // hub starts so far (each has its own log)
	hub      *server
	password map[string]string
}

// TestClassroomHub runs make hub's JupyterHub (.ci/hub.sh, PAM logins, one server per student) on
// 127.0.0.1 for three students with real system accounts, as a class uses it: each logs in through
// the browser; a wrong password and an account not on the roster are refused; the three run notebook
// 00 (Run All) at the same time, each in their own copy, with their own kernel under their own
// account, and each doctor shows the student's own seat; each saves their work and nothing of it
// appears in another's copy or in the project; the grader grades the three copies from the roster;
// a student who deletes notebooks gets them back at their next login without touching anyone else's
// work; the hub stopped in the middle of a run loses no saved notebook; and the shared password an
// instructor may ask for replaces the system passwords, with a warning, for the roster's names only.
//
// It needs root (it makes the accounts, and the hub starts servers as them), Debian's jupyterhub
// (.ci/setup.sh installs it) and what the browser test needs; it runs with the browser test
// (KERNELS_BROWSER_TEST=1, make test).
func TestClassroomHub(t *testing.T) {
	s := needSuite(t)
	if os.Getuid() != 0 {
		t.Skip("the classroom hub test makes system accounts and starts the hub, which runs servers as them: it needs root")
	}
	if _, err := exec.LookPath("jupyterhub"); err != nil {
		t.Fatal("no jupyterhub on PATH: KERNELS_BROWSER_TEST=1 needs it (.ci/setup.sh installs Debian's)")
	}
	out := filepath.Join(s.root, ".scratch", "browser", "hub")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	c := newClassroom(t, s, out)
	c.start(t)
	projectSums := sums(t, filepath.Join(s.root, "notebooks"), filepath.Join(c.dir, "project", "notebooks"))

	browsers := map[string]context.Context{}
	for _, name := range append([]string{hubOutsider}, hubStudents...) {
		bctx, cancel, err := startBrowser(s.chrome, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cancel)
		browsers[name] = bctx
	}

	t.Run("refusals", func(t *testing.T) {
		ada := hubStudents[0]
		if _, err := c.login(browsers[ada], ada, "not-"+c.password[ada]); err == nil || !strings.Contains(err.Error(), "Invalid username or password") {
			t.Errorf("a wrong password: %v", err)
		}
		if _, err := c.login(browsers[hubOutsider], hubOutsider, c.password[hubOutsider]); err == nil || !strings.Contains(err.Error(), "Invalid username or password") {
			t.Errorf("an account that is not on the roster logged in: %v", err)
		}
		if _, err := c.token(ada, "not-"+c.password[ada]); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
			t.Errorf("a token for a wrong password: %v", err)
		}
		if _, err := os.Stat(c.folder(ada)); !os.IsNotExist(err) {
			t.Errorf("a refused login started %s's server (its folder: %v)", ada, err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// Everyone logs in through the browser; the test's own REST calls carry a token each.
	api := map[string]target{}
	for _, name := range hubStudents {
		if _, err := c.login(browsers[name], name, c.password[name]); err != nil {
			t.Fatal(err)
		}
		tok, err := c.token(name, c.password[name])
		if err != nil {
			t.Fatal(err)
		}
		api[name] = target{jupyterAPI{URL: c.url + "/user/" + name, Token: tok}, "", c.hub}
		checkCopy(t, name, c.folder(name))
	}

	t.Run("three students at once", func(t *testing.T) {
		kernels := watchKernels()
		var wg sync.WaitGroup
		errs := make([]error, len(hubStudents))
		for i, name := range hubStudents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				logf := func(format string, args ...any) { t.Logf(name+": "+format, args...) }
				lim := limits{Load: 3 * time.Minute, Run: 12 * time.Minute, Logf: logf}
				want := check{Banner: s.banner(), Rendering: true, Checker: s.checker()}
				r, err := runNotebook(browsers[name], api[name], c.folder(name), "00_setup.ipynb", lim, want, filepath.Join(out, name))
				if r != nil && r.Took > 0 {
					t.Logf("%s: notebook 00 in %.1f s, %d code cells, %d plots, %d tables", name, r.Took.Seconds(), r.CodeCells, r.Plots, r.Tables)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		uids := kernels()
		for i, name := range hubStudents {
			if errs[i] != nil {
				t.Errorf("%s: %v", name, errs[i])
			}
			if uid := uidOf(t, name); !uids[uid] {
				t.Errorf("%s: no gonb kernel ran under the student's own account (uid %d); kernels ran under %v", name, uid, uids)
			}
			c.checkSeat(t, name, filepath.Join(out, name, "00_setup.ipynb"))
		}
		if uids[0] {
			t.Errorf("a gonb kernel ran as root")
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// Each saves their work through their own server: a note of their own in notebook 00.
	marks := map[string]string{}
	for _, name := range hubStudents {
		marks[name] = "work of " + name + " " + strconv.FormatInt(time.Now().UnixNano(), 36)
		if err := api[name].addNote("00_setup.ipynb", marks[name]); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("each student's work is theirs alone", func(t *testing.T) {
		c.checkMarks(t, marks, "00_setup.ipynb")
		if got := sums(t, filepath.Join(s.root, "notebooks"), filepath.Join(c.dir, "project", "notebooks")); got != projectSums {
			t.Errorf("the project's notebooks changed while the students worked")
		}
	})

	t.Run("grading the class", func(t *testing.T) { c.grade(t) })

	t.Run("deleted notebooks come back", func(t *testing.T) {
		bo := hubStudents[1]
		for _, nb := range []string{"00_setup.ipynb", "02_oneflow.ipynb"} {
			if code, err := api[bo].api("DELETE", "/api/contents/"+nb, nil); err != nil || code != http.StatusNoContent {
				t.Fatalf("%s deleting %s: HTTP %d %v", bo, nb, code, err)
			}
		}
		if err := c.stopServer(bo, api[bo].Token); err != nil {
			t.Fatal(err)
		}
		if _, err := c.login(browsers[bo], bo, c.password[bo]); err != nil {
			t.Fatal(err)
		}
		checkCopy(t, bo, c.folder(bo))
		delete(marks, bo) // bo's copy of 00 is the project's again
		c.checkMarks(t, marks, "00_setup.ipynb")
		for _, nb := range []string{"00_setup.ipynb", "02_oneflow.ipynb"} {
			if got, want := sum(t, filepath.Join(c.folder(bo), nb)), sum(t, filepath.Join(c.dir, "project", "notebooks", nb)); got != want {
				t.Errorf("%s's %s came back different from the project's", bo, nb)
			}
		}
	})

	t.Run("the hub stopped mid-run", func(t *testing.T) {
		ada := hubStudents[0]
		before := sum(t, filepath.Join(c.folder(ada), "00_setup.ipynb"))
		if err := startRunAll(browsers[ada], api[ada], "00_setup.ipynb"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		left, err := c.hub.Stop()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hub stopped mid-run; processes that outlived it and were killed: %v", left)
		if got := sum(t, filepath.Join(c.folder(ada), "00_setup.ipynb")); got != before {
			t.Errorf("%s's saved notebook changed when the hub stopped", ada)
		}
		c.start(t)
		if _, err := c.login(browsers[ada], ada, c.password[ada]); err != nil {
			t.Fatal(err)
		}
		if got := sum(t, filepath.Join(c.folder(ada), "00_setup.ipynb")); got != before {
			t.Errorf("%s's saved notebook changed when her server started again", ada)
		}
		c.checkMarks(t, marks, "00_setup.ipynb")
	})

	t.Run("a shared password, when the instructor asks for it", func(t *testing.T) {
		if _, err := c.hub.Stop(); err != nil {
			t.Fatal(err)
		}
		tok, err := randomToken()
		if err != nil {
			t.Fatal(err)
		}
		shared := "shared-" + tok[:10]
		log := c.start(t, "HUB_AUTH=shared-password", "HUB_PASSWORD="+shared)
		if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte("WARNING: HUB_AUTH=shared-password")) {
			t.Errorf("the hub did not warn that every student logs in with one password")
		}
		cy := hubStudents[2]
		if _, err := c.token(cy, shared); err != nil {
			t.Errorf("%s with the shared password: %v", cy, err)
		}
		if _, err := c.token(cy, c.password[cy]); err == nil {
			t.Errorf("%s's own system password still logs in under the shared password", cy)
		}
		if _, err := c.token(hubOutsider, shared); err == nil {
			t.Errorf("an account that is not on the roster logged in with the shared password")
		}
	})
}

// newClassroom makes the accounts (removed when t ends, after the hub stops), the roster and the
// hub's folder.
func newClassroom(t *testing.T, s suite, out string) *classroom {
	c := &classroom{s: s, password: map[string]string{}, out: out}
	for _, name := range append([]string{hubOutsider}, hubStudents...) {
		removeAccount(name) // a run that was killed may have left it
		if msg, err := exec.Command("useradd", "-m", "-s", "/bin/bash", name).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", name, err, msg)
		}
		t.Cleanup(func() { removeAccount(name) })
		pw, err := randomToken()
		if err != nil {
			t.Fatal(err)
		}
		c.password[name] = pw[:16]
		chpasswd := exec.Command("chpasswd")
		chpasswd.Stdin = strings.NewReader(name + ":" + c.password[name] + "\n")
		if msg, err := chpasswd.CombinedOutput(); err != nil {
			t.Fatalf("chpasswd %s: %v: %s", name, err, msg)
		}
	}
	dir, err := os.MkdirTemp("", "cudalessons-hub-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c.dir = dir
	c.roster = filepath.Join(t.TempDir(), "students.txt")
	roster := "# the hub test's class\n" + strings.Join(hubStudents, "\n") + "\n"
	if err := os.WriteFile(c.roster, []byte(roster), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := make([]string, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = strconv.Itoa(p)
	}
	c.url = "http://127.0.0.1:" + ports[0]
	c.env = append(os.Environ(), "ROSTER="+c.roster, "HUB_DIR="+dir, "IP=127.0.0.1", "PORT="+ports[0],
		"HUB_API_PORT="+ports[1], "HUB_PROXY_API_PORT="+ports[2])
	return c
}

// removeAccount ends the account's processes and removes it with its home.
func removeAccount(name string) {
	if err := exec.Command("id", name).Run(); err != nil {
		return
	}
	_ = exec.Command("pkill", "-KILL", "-u", name).Run()
	time.Sleep(200 * time.Millisecond)
	_ = exec.Command("userdel", "-r", "-f", name).Run()
}

// start starts the hub (again, after a stop: same folder, same database) with the extra environment
// given, stopping it when t ends. It returns the file of the hub's log.
func (c *classroom) start(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(c.s.root, ".ci/hub.sh"))
	cmd.Env = append(c.env[:len(c.env):len(c.env)], env...)
	c.starts++
	log := filepath.Join(c.out, fmt.Sprintf("hub-%d.log", c.starts))
	hub, err := startProcess(cmd, "the classroom hub (.ci/hub.sh)", jupyterAPI{URL: c.url}, "/hub/api", log, 6*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.hub = hub
	t.Cleanup(func() {
		left, err := hub.Stop()
		if err != nil {
			t.Error(err)
		}
		if len(left) > 0 {
			t.Logf("processes of the hub outlived it and were killed: %s", strings.Join(left, ", "))
		}
	})
	t.Logf("classroom hub pid %d on %s (log %s)", hub.Pid(), c.url, log)
	return log
}

// folder is a student's copy of the notebooks.
func (c *classroom) folder(name string) string { return filepath.Join("/home", name, "cudalessons") }

// login logs name in through the browser's login page and waits until the student's server shows
// its file list: it returns the page's address then, or the login page's error.
func (c *classroom) login(bctx context.Context, name, password string) (string, error) {
	ctx, cancel := context.WithTimeout(bctx, 5*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(c.url+"/hub/login")); err != nil {
		return "", fmt.Errorf("%s: opening the login page: %w", name, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "", err
	}
	if strings.Contains(loc, "/hub/login") { // not logged in yet
		err := chromedp.Do(ctx,
			chromedp.WaitVisible(chromedp.CSS("#username_input")),
			chromedp.SendKeys(chromedp.CSS("#username_input"), name),
			chromedp.SendKeys(chromedp.CSS("#password_input"), password),
			chromedp.Click(chromedp.CSS("#login_submit")),
		)
		if err != nil {
			return "", fmt.Errorf("%s: filling the login form: %w", name, err)
		}
	}
	tree := "/user/" + name + "/tree"
	err = waitFor(ctx, 4*time.Minute, func() (bool, error) {
		var err error
		if loc, err = chromedp.Run(ctx, chromedp.Location()); err != nil {
			return false, err
		}
		if strings.Contains(loc, "/hub/login") {
			msg, _ := eval[string](ctx, `(document.querySelector('.login_error') || {textContent: ''}).textContent.trim()`)
			if msg != "" {
				return false, fmt.Errorf("%s: the login page says %q", name, msg)
			}
		}
		if !strings.Contains(loc, tree) {
			return false, nil
		}
		return eval[bool](ctx, `!!document.querySelector('#notebook_list .list_item a[href$=".ipynb"]')`)
	})
	if err != nil {
		return loc, fmt.Errorf("%s: logging in (at %s): %w", name, loc, err)
	}
	return loc, nil
}

// token asks the hub for an API token of name, authenticated by the password (PAM, as a login).
func (c *classroom) token(name, password string) (string, error) {
	body, _ := json.Marshal(map[string]any{"auth": map[string]string{"username": name, "password": password}, "note": "hub test", "expires_in": 3600})
	resp, err := http.Post(c.url+"/hub/api/users/"+name+"/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("a token for %s: HTTP %d", name, resp.StatusCode)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Token == "" {
		return "", fmt.Errorf("a token for %s: %v", name, err)
	}
	return tok.Token, nil
}

// stopServer stops name's server through the hub, as the student's Control Panel does, and waits
// until it is stopped.
func (c *classroom) stopServer(name, token string) error {
	req, _ := http.NewRequest("DELETE", c.url+"/hub/api/users/"+name+"/server", nil)
	req.Header.Set("Authorization", "token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("stopping %s's server: HTTP %d", name, resp.StatusCode)
	}
	return waitFor(context.Background(), 2*time.Minute, func() (bool, error) {
		req, _ := http.NewRequest("GET", c.url+"/hub/api/users/"+name, nil)
		req.Header.Set("Authorization", "token "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var u struct {
			Server  *string `json:"server"`
			Pending *string `json:"pending"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&u)
		return u.Server == nil && u.Pending == nil, nil
	})
}

// checkCopy checks that a student's folder is theirs and private, with every notebook of the project.
func checkCopy(t *testing.T, name, dir string) {
	t.Helper()
	uid := uidOf(t, name)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("%s's copy: %v", name, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s's folder %s: owner %d mode %v, want %d and drwx------", name, dir, st.Uid, fi.Mode(), uid)
	}
	want, _ := filepath.Glob(filepath.Join("..", "notebooks", "*.ipynb"))
	for _, p := range want {
		fi, err := os.Stat(filepath.Join(dir, filepath.Base(p)))
		if err != nil {
			t.Errorf("%s's copy lacks %s: %v", name, filepath.Base(p), err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
			t.Errorf("%s's %s belongs to uid %d", name, filepath.Base(p), st.Uid)
		}
	}
}

// checkSeat checks that the doctor of a student's executed notebook 00 shows the student's own seat
// from the hub's seats.json (and on a machine of several GPUs, that the first two students have
// different ones).
func (c *classroom) checkSeat(t *testing.T, name, executed string) {
	t.Helper()
	var seats struct {
		Devices  []string `json:"devices"`
		Students []struct {
			Name string            `json:"name"`
			Note string            `json:"note"`
			Env  map[string]string `json:"env"`
		} `json:"students"`
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "seats.json"))
	if err == nil {
		err = json.Unmarshal(b, &seats)
	}
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(executed)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range seats.Students {
		// The note as an HTML table cell writes it (the doctor's output is HTML).
		shown := bytes.Contains(doc, []byte(htmlEscape(st.Note)))
		switch {
		case st.Name == name && !shown:
			t.Errorf("%s's doctor does not show the seat %q", name, st.Note)
		case st.Name != name && shown:
			t.Errorf("%s's doctor shows %s's seat", name, st.Name)
		}
	}
	if len(seats.Devices) >= 2 && seats.Students[0].Env["CUDA_VISIBLE_DEVICES"] == seats.Students[1].Env["CUDA_VISIBLE_DEVICES"] {
		t.Errorf("two GPUs, and the first two students share one: %v", seats.Students[:2])
	}
}

// htmlEscape escapes as Go's html.EscapeString does, which the tables use, then JSON-escapes
// the result as the notebook file stores it.
func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;")
	b, _ := json.Marshal(r.Replace(s))
	return strings.Trim(string(b), `"`)
}

// checkMarks checks that each student's notebook holds their own mark and no one else's.
func (c *classroom) checkMarks(t *testing.T, marks map[string]string, nb string) {
	t.Helper()
	for _, name := range hubStudents {
		b, err := os.ReadFile(filepath.Join(c.folder(name), nb))
		if err != nil {
			t.Errorf("%s's %s: %v", name, nb, err)
			continue
		}
		for other, m := range marks {
			has := bytes.Contains(b, []byte(m))
			if other == name && !has {
				t.Errorf("%s's %s lost their saved work", name, nb)
			}
			if other != name && has {
				t.Errorf("%s's %s holds %s's work", name, nb, other)
			}
		}
		if !json.Valid(b) {
			t.Errorf("%s's %s is not valid JSON", name, nb)
		}
	}
}

// addNote saves path through the student's server with a markdown cell holding note at its end.
func (a jupyterAPI) addNote(path, note string) error {
	var model struct {
		Content map[string]any `json:"content"`
	}
	if code, err := a.api("GET", "/api/contents/"+escapePath(path)+"?type=notebook&content=1", &model); err != nil || code != http.StatusOK {
		return fmt.Errorf("reading %s: HTTP %d %v", path, code, err)
	}
	cells, _ := model.Content["cells"].([]any)
	model.Content["cells"] = append(cells, map[string]any{"cell_type": "markdown", "metadata": map[string]any{}, "source": note})
	body, _ := json.Marshal(map[string]any{"type": "notebook", "format": "json", "content": model.Content})
	req, _ := http.NewRequest("PUT", a.URL+"/api/contents/"+escapePath(path), bytes.NewReader(body))
	req.Header.Set("Authorization", "token "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("saving %s: HTTP %d", path, resp.StatusCode)
	}
	return nil
}

// startRunAll opens path in the browser and starts Run All without waiting for it.
func startRunAll(bctx context.Context, tg target, path string) error {
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(tg.URL+"/notebooks/"+escapePath(path))); err != nil {
		return err
	}
	// The page defines Jupyter before Jupyter.notebook: wait for the notebook to load before
	// asking for its kernel.
	if err := waitFor(ctx, 2*time.Minute, func() (bool, error) { return eval[bool](ctx, jsLoaded) }); err != nil {
		return fmt.Errorf("%s: the notebook did not load: %w", path, err)
	}
	if err := waitFor(ctx, 2*time.Minute, func() (bool, error) {
		k, err := eval[kernelState](ctx, jsKernel)
		return k.Connected, err
	}); err != nil {
		return fmt.Errorf("%s: the kernel did not connect: %w", path, err)
	}
	_, err := eval[bool](ctx, `(() => { window.onbeforeunload = null; Jupyter.notebook.set_autosave_interval(0); Jupyter.notebook.execute_all_cells(); return true; })()`)
	return err
}

// watchKernels records the owner of every gonb process until the returned function is called,
// which returns the set of their user ids.
func watchKernels() func() map[int]bool {
	uids := map[int]bool{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		for {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				pid, err := strconv.Atoi(e.Name())
				if err != nil {
					continue
				}
				if _, _, name, ok := statOf(pid); !ok || name != "gonb" {
					continue
				}
				if st, err := os.Stat(filepath.Join("/proc", e.Name())); err == nil {
					mu.Lock()
					uids[int(st.Sys().(*syscall.Stat_t).Uid)] = true
					mu.Unlock()
				}
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() map[int]bool {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return uids
	}
}

// uidOf is the user id of an account.
func uidOf(t *testing.T, name string) int {
	t.Helper()
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatalf("id -u %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return uid
}

// sum is the checksum of a file (zero when it cannot be read, which the comparisons then fail on).
func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	s, err := sumOf(path)
	if err != nil {
		t.Error(err)
	}
	return s
}

// sums is one line per notebook of the folders: name and checksum.
func sums(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		paths, _ := filepath.Glob(filepath.Join(d, "*.ipynb"))
		for _, p := range paths {
			fmt.Fprintf(&b, "%s %x\n", p, sum(t, p))
		}
	}
	return b.String()
}

// grade hands in ada's notebook 01 with its exercises solved, bo's notebook 02 with a kernel that
// never ends and cy's with one that faults (gradetest), then grades the class from the roster with
// the grader make grade builds: grading finishes; the gradebook has every exercise of every student,
// ada's solved ones pass (without a GPU: compiled, not run), bo's hang and cy's fault get their
// verdicts on a GPU (without one: compiled, not run, as the PTX is right), and every other untouched
// starter fails, so each row comes from that student's own copy.
func (c *classroom) grade(t *testing.T) {
	ada := hubStudents[0]
	nb := filepath.Join(c.folder(ada), "01_rwkv.ipynb")
	data, err := os.ReadFile(nb)
	if err != nil {
		t.Fatal(err)
	}
	solved, err := grade.Solved(nb, data, lessons.All())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nb, solved, 0o644); err != nil {
		t.Fatal(err)
	}
	uid := uidOf(t, ada)
	if err := os.Chown(nb, uid, uid); err != nil { // useradd gives each account its own group
		t.Fatal(err)
	}
	broken := map[string]gradetest.Mistake{hubStudents[1]: gradetest.Hang, hubStudents[2]: gradetest.Fault}
	for who, m := range broken {
		p := filepath.Join(c.folder(who), gradetest.Lesson+".ipynb")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		handed, err := grade.HandedIn(p, data, lessons.All(), m.Apply)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, handed, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uidOf(t, who), uidOf(t, who)); err != nil {
			t.Fatal(err)
		}
	}

	bin := filepath.Join(t.TempDir(), "grade")
	args := []string{"build", "-o", bin}
	if c.s.mode == "nogpu" {
		args = append(args, "-tags=nocuda")
	}
	build := exec.Command("go", append(args, "./cmd/grade")...)
	build.Dir = c.s.root
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the grader: %v\n%s", err, msg)
	}
	book := filepath.Join(c.out, "gradebook")
	os.RemoveAll(book)
	msg, err := exec.Command(bin, "-students", c.roster, "-gradebook", book).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("grading the class: want exit status 1 (bo's and cy's starters fail), got %v\n%s", err, msg)
	}
	t.Logf("grader:\n%s", msg)
	f, err := os.Open(filepath.Join(book, "gradebook.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("gradebook.csv: %v (%d rows)", err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	exercises := 0
	for _, l := range lessons.All() {
		exercises += len(l.Exercises)
	}
	per := map[string]int{}
	for _, r := range rows[1:] {
		who, notebook, result := r[col["student"]], r[col["notebook"]], grade.Verdict(r[col["result"]])
		per[who]++
		if m, ok := broken[who]; ok && notebook == gradetest.Lesson+".ipynb" && strings.HasPrefix(r[col["exercise"]], fmt.Sprintf("%s #%d", gradetest.Lesson, gradetest.Exercise)) {
			reason := r[col["reason"]]
			switch {
			case c.s.mode == "nogpu" && result != grade.NotRun:
				t.Errorf("%s's %s without a GPU: %s (%s), want %s", who, m.Name, result, reason, grade.NotRun)
			case c.s.mode == "gpu" && (result != grade.Failed || !strings.Contains(reason, m.Verdict)):
				t.Errorf("%s's %s: %s (%s), want %s with %q", who, m.Name, result, reason, grade.Failed, m.Verdict)
			}
			continue
		}
		if notebook != "01_rwkv.ipynb" {
			continue
		}
		ok := result == grade.Passed || result == grade.NotRun
		if who == ada && !ok {
			t.Errorf("%s's solved exercise %s: %s", who, r[col["exercise"]], result)
		}
		if who != ada && result != grade.Failed {
			t.Errorf("%s's untouched starter %s: %s, want %s", who, r[col["exercise"]], result, grade.Failed)
		}
	}
	for _, name := range hubStudents {
		if per[name] != exercises {
			t.Errorf("the gradebook has %d rows for %s, want one per exercise (%d)", per[name], name, exercises)
		}
	}
	md, err := os.ReadFile(filepath.Join(book, "gradebook.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range hubStudents {
		if !bytes.Contains(md, []byte(name)) {
			t.Errorf("gradebook.md does not name %s", name)
		}
	}
}

package notebooks

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// jupyterAPI is a Jupyter server's REST API: its address and the token its calls carry.
type jupyterAPI struct {
	URL   string // http://127.0.0.1:<port>, or a student's server behind the hub: <hub>/user/<name>
	Token string
}

// server is a Jupyter server started by a script (.ci/jupyter.sh, the one `make notebooks` runs) on a
// free port of 127.0.0.1 with a fresh token, or the classroom hub (.ci/hub.sh). Stop ends it by its
// own process id.
type server struct {
	jupyterAPI
	Log string // the file holding its stdout and stderr

	what    string // "the jupyter server (<script>)", for messages
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // its exit status, once exited is closed
	mu      sync.Mutex
	seen    map[proc]bool // every process seen below the server (kernels and what they start)
	stop    sync.Once
	stopErr error
	left    []string
}

// startServer runs `bash script --ip=127.0.0.1 --port=<free> --port-retries=0 args...` with
// JUPYTER_TOKEN set and waits until the server answers its API, at most limit. It fails naming what
// happened: the script exited before the server answered, or nothing answered in time (then the
// process is stopped before startServer returns). The log goes to logPath.
func startServer(script string, args []string, logPath string, limit time.Duration) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	argv := append([]string{script, "--ip=127.0.0.1", "--port=" + strconv.Itoa(port), "--port-retries=0"}, args...)
	cmd := exec.Command("bash", argv...)
	cmd.Env = append(os.Environ(), "JUPYTER_TOKEN="+token)
	api := jupyterAPI{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: token}
	return startProcess(cmd, "the jupyter server ("+script+")", api, "/api/status?token="+token, logPath, limit)
}

// startProcess starts cmd, its output to logPath, and waits until GET api.URL+probe answers 200, at
// most limit, failing as startServer says.
func startProcess(cmd *exec.Cmd, what string, api jupyterAPI, probe, logPath string, limit time.Duration) (*server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: its log: %w", what, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Should this test process die, the server gets SIGTERM rather than outliving it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	s := &server{jupyterAPI: api, Log: logPath, what: what, cmd: cmd,
		exited: make(chan struct{}), seen: map[proc]bool{}}
	go func() {
		s.waitErr = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	go s.watch()
	deadline := time.Now().Add(limit)
	for {
		if s.answers(probe) {
			return s, nil
		}
		select {
		case <-s.exited:
			return s, fmt.Errorf("%s, pid %d, exited before answering on %s: %v; its log ends:\n%s",
				what, cmd.Process.Pid, s.URL, s.waitErr, tailOf(logPath, 1500))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_, stopErr := s.Stop()
			return s, fmt.Errorf("%s, pid %d, did not answer on %s within %v; stopped it (%v); its log ends:\n%s",
				what, cmd.Process.Pid, s.URL, limit, errOrOK(stopErr), tailOf(logPath, 1500))
		}
	}
}

// watch records the processes below the server every half second while it runs: a kernel's
// children can outlive it (gonb's gopls does when the kernel is killed), and Stop must find them.
func (s *server) watch() {
	for {
		for _, p := range descendants(s.Pid()) {
			s.mu.Lock()
			s.seen[p] = true
			s.mu.Unlock()
		}
		select {
		case <-s.exited:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// answers reports whether GET s.URL+probe answers 200 (for Jupyter: its status API, with the token).
func (s *server) answers(probe string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(s.URL + probe)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Pid is the server's process id (the script execs Jupyter, so it is Jupyter's).
func (s *server) Pid() int { return s.cmd.Process.Pid }

// Alive reports whether the server process is still running.
func (s *server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop ends the server by its process id: SIGTERM (Jupyter then shuts its kernels down), SIGKILL
// after 20 s; it fails if the server had to be killed. Every process seen below the server (kernels
// and what they started) must end with it: those left are killed by their ids and returned. Stop
// is safe to call more than once.
func (s *server) Stop() (left []string, err error) {
	s.stop.Do(func() {
		if s.Alive() {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
				s.stopErr = fmt.Errorf("%s, pid %d, ignored SIGTERM for 20 s and was killed", s.what, s.Pid())
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for p := range s.seen {
			if p.gone(5 * time.Second) {
				continue
			}
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			s.left = append(s.left, fmt.Sprintf("%d (%s)", p.pid, p.name))
		}
		sort.Strings(s.left)
	})
	return s.left, s.stopErr
}

// api calls the server's REST API and decodes a JSON answer into out (when not nil). It returns the
// HTTP status.
func (s jupyterAPI) api(method, path string, out any) (int, error) {
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "token "+s.Token)
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// exists reports whether the server has a notebook at path (relative to the folder it serves).
func (s jupyterAPI) exists(path string) (bool, error) {
	code, err := s.api("GET", "/api/contents/"+escapePath(path)+"?content=0", nil)
	if err != nil {
		return false, err
	}
	switch code {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("GET /api/contents/%s: HTTP %d", path, code)
}

// shutdownSessions shuts down the kernels of the sessions open on path.
func (s jupyterAPI) shutdownSessions(path string) error {
	var sessions []struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	if _, err := s.api("GET", "/api/sessions", &sessions); err != nil {
		return err
	}
	var errs []error
	for _, ss := range sessions {
		if ss.Path != path {
			continue
		}
		if code, err := s.api("DELETE", "/api/sessions/"+ss.ID, nil); err != nil {
			errs = append(errs, err)
		} else if code/100 != 2 {
			errs = append(errs, fmt.Errorf("DELETE /api/sessions/%s: HTTP %d", ss.ID, code))
		}
	}
	return errors.Join(errs...)
}

func escapePath(p string) string {
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tailOf returns the last n bytes of a file, for error messages.
func tailOf(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// proc names a process by id and start time, so that a reused id is never mistaken for it.
type proc struct {
	pid   int
	start string
	name  string
}

// statOf reads a process's parent id, start time and name from /proc; a zombie counts as ended.
func statOf(pid int) (ppid int, start, name string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, "", "", false
	}
	name = s[open+1 : end]
	f := strings.Fields(s[end+1:]) // f[0] is field 3 (state)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, "", "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], name, true // field 22: start time
}

// descendants lists the processes below pid now.
func descendants(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, start, name, ok := statOf(p); ok {
			children[ppid] = append(children[ppid], proc{p, start, name})
		}
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// gone waits up to limit for the process to end and reports whether it did.
func (p proc) gone(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		_, start, _, ok := statOf(p.pid)
		if !ok || start != p.start {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

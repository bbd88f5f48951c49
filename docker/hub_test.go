package docker

// The Zero to JupyterHub values (hub/values.yaml) and the image they run (Dockerfile), checked here
// without Docker, Kubernetes or a GPU: the values' keys against lists taken from the chart's schema,
// the single-user command, the GPU, the environment and the copy hook against the Dockerfile, and the
// hook's script run on temporary folders. What only a cluster can show (the image builds, a pod gets
// its GPU, a student logs in) is not tested here.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The chart version whose schema the key lists below come from: jupyterhub/values.schema.yaml at tag
// 4.4.0 of github.com/jupyterhub/zero-to-jupyterhub-k8s (commit 5c5f5df7, 2026-06-10). That schema
// has additionalProperties: false at each of these levels, so helm refuses any other key there.
const (
	chartVersion = "4.4.0"
	// The JupyterHub of that chart's hub image (images/hub/requirements.txt, jupyterhub==5.5.0): the
	// image's jupyterhub-singleuser is pinned to it.
	chartHubVersion = "5.5.0"
	// The folder of a student's home that holds their notebooks (helpers/classroom.Folder in the
	// one-machine hub).
	lessonsFolder = "cudalessons"
)

var chartKeys = map[string][]string{
	"": {"cull", "custom", "debug", "enabled", "fullnameOverride", "global", "httpRoute", "hub",
		"imagePullSecret", "imagePullSecrets", "ingress", "nameOverride", "prePuller", "proxy", "rbac",
		"scheduling", "singleuser"},
	"singleuser": {"allowPrivilegeEscalation", "cloudMetadata", "cmd", "cpu", "defaultUrl", "events",
		"extraAnnotations", "extraContainers", "extraEnv", "extraFiles", "extraLabels",
		"extraNodeAffinity", "extraPodAffinity", "extraPodAntiAffinity", "extraPodConfig",
		"extraResource", "extraTolerations", "fsGid", "image", "initContainers", "lifecycleHooks",
		"memory", "networkPolicy", "networkTools", "nodeSelector", "podNameTemplate", "profileList",
		"serviceAccountName", "startTimeout", "storage", "uid"},
	"singleuser.storage": {"capacity", "dynamic", "extraLabels", "extraVolumeMounts", "extraVolumes",
		"homeMountPath", "static", "type"},
	"singleuser.storage.dynamic": {"pvcNameTemplate", "storageAccessModes", "storageClass", "subPath",
		"volumeNameTemplate"},
	"singleuser.image":          {"name", "pullPolicy", "pullSecrets", "tag"},
	"singleuser.extraResource":  {"guarantees", "limits"},
	"singleuser.lifecycleHooks": {"postStart", "preStop"},
	"singleuser.cpu":            {"guarantee", "limit"},
	"singleuser.memory":         {"guarantee", "limit"},
	"hub": {"activeServerLimit", "allowNamedServers", "annotations", "args", "authenticatePrometheus",
		"baseUrl", "command", "concurrentSpawnLimit", "config", "consecutiveFailureLimit",
		"containerSecurityContext", "cookieSecret", "db", "deploymentStrategy", "existingSecret",
		"extraConfig", "extraContainers", "extraEnv", "extraFiles", "extraPodSpec",
		"extraVolumeMounts", "extraVolumes", "fsGid", "image", "initContainers", "labels", "lifecycle",
		"livenessProbe", "loadRoles", "namedServerLimitPerUser", "networkPolicy", "nodeSelector", "pdb",
		"podSecurityContext", "readinessProbe", "redirectToServer", "resources", "revisionHistoryLimit",
		"service", "serviceAccount", "services", "shutdownOnLogout", "templatePaths", "templateVars",
		"tolerations"},
	"proxy": {"annotations", "chp", "deploymentStrategy", "https", "labels", "secretSync", "secretToken",
		"service", "traefik"},
}

// loadValues reads hub/values.yaml as JSON through python3's yaml module; it skips the test when
// there is none.
func loadValues(t *testing.T) (map[string]any, string) {
	t.Helper()
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Skip("no python3 to read hub/values.yaml (the test converts YAML to JSON with python3's yaml module): install python3-yaml")
		}
	}
	if err := exec.Command(python, "-c", "import yaml").Run(); err != nil {
		t.Skipf("%s has no yaml module to read hub/values.yaml: install python3-yaml (Debian/Ubuntu) or PyYAML", python)
	}
	raw, err := os.ReadFile("hub/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-c",
		"import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout, default=str)",
		"hub/values.yaml").Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("hub/values.yaml is not valid YAML: %v\n%s", err, msg)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("hub/values.yaml: %v", err)
	}
	return v, string(raw)
}

// get walks v by keys; nil when a key is missing.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

// dockerfile is the Dockerfile's instructions, continuation lines joined and comments dropped.
type dockerfile struct {
	instructions []string
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	cur := ""
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		if cur != "" {
			d.instructions = append(d.instructions, cur)
		}
		cur = ""
	}
	return d
}

// all returns the arguments of every instruction named op.
func (d dockerfile) all(op string) []string {
	var out []string
	for _, in := range d.instructions {
		name, rest, _ := strings.Cut(in, " ")
		if strings.EqualFold(name, op) {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

func (d dockerfile) workdir(t *testing.T) string {
	w := d.all("WORKDIR")
	if len(w) == 0 {
		t.Fatal("Dockerfile: no WORKDIR (the project's folder in the image)")
	}
	return w[len(w)-1]
}

func TestValuesKeysAreTheChartsKeys(t *testing.T) {
	v, _ := loadValues(t)
	for path, known := range chartKeys {
		var node any = v
		if path != "" {
			node = get(v, strings.Split(path, ".")...)
		}
		m, ok := node.(map[string]any)
		if !ok {
			continue // not set here: the chart's default
		}
		for k := range m {
			if !slices.Contains(known, k) {
				where := path
				if where == "" {
					where = "the top level"
				}
				t.Errorf("%s: %q is not a key of chart %s's schema at %s (helm would refuse it)", "hub/values.yaml", k, chartVersion, where)
			}
		}
	}
	// hub.config: pass-through traitlets sections, which the schema wants named like classes.
	if cfg, ok := get(v, "hub", "config").(map[string]any); ok {
		for k, sec := range cfg {
			if k == "" || k[0] < 'A' || k[0] > 'Z' {
				t.Errorf("hub.config.%s: sections are Configurable class names, starting with a capital (the chart's hub exits on others)", k)
			}
			if _, ok := sec.(map[string]any); !ok {
				t.Errorf("hub.config.%s: want a mapping of traits, got %v", k, sec)
			}
		}
	}
}

func TestValuesStartTheSingleUserServer(t *testing.T) {
	v, _ := loadValues(t)
	cmd := get(v, "singleuser", "cmd")
	first := ""
	switch c := cmd.(type) {
	case string:
		first = strings.Fields(c)[0]
	case []any:
		if len(c) > 0 {
			first = str(c[0])
		}
	}
	if first != "jupyterhub-singleuser" {
		t.Errorf("singleuser.cmd = %v: want jupyterhub-singleuser (z2jh's hub talks to that server; the image's CMD is make notebooks)", cmd)
	}
	if name := str(get(v, "singleuser", "image", "name")); name == "" {
		t.Error("singleuser.image.name is empty: the chart would run its own sample image, without the Go kernel")
	}
	if tag := get(v, "singleuser", "image", "tag"); str(tag) == "" || str(tag) == "latest" {
		t.Errorf("singleuser.image.tag = %v: want a fixed tag (a string), so that every student gets the same image", tag)
	}
}

// quantity reads a Kubernetes quantity (or an id) given as a number or a string.
func quantity(v any) string {
	switch q := v.(type) {
	case float64:
		return strconv.FormatFloat(q, 'f', -1, 64)
	case string:
		return q
	}
	return ""
}

func TestValuesGiveOneGPUPerStudent(t *testing.T) {
	v, _ := loadValues(t)
	limit := quantity(get(v, "singleuser", "extraResource", "limits", "nvidia.com/gpu"))
	if limit != "1" {
		t.Errorf(`singleuser.extraResource.limits["nvidia.com/gpu"] = %q: want 1, one whole GPU per student`, limit)
	}
	if g := get(v, "singleuser", "extraResource", "guarantees", "nvidia.com/gpu"); g != nil && quantity(g) != limit {
		t.Errorf(`singleuser.extraResource.guarantees["nvidia.com/gpu"] = %v: Kubernetes wants an extended resource's request equal to its limit (%s)`, g, limit)
	}
}

func TestValuesEnvironment(t *testing.T) {
	v, _ := loadValues(t)
	d := readDockerfile(t)
	env, ok := get(v, "singleuser", "extraEnv").(map[string]any)
	if !ok {
		t.Fatal("singleuser.extraEnv is missing: the notebooks need KERNELS_ROOT, the doctor KERNELS_SEAT")
	}
	if got, want := str(env["KERNELS_ROOT"]), d.workdir(t); got != want {
		t.Errorf("singleuser.extraEnv.KERNELS_ROOT = %q, but the Dockerfile puts the project in %q (its WORKDIR)", got, want)
	}
	if strings.TrimSpace(str(env["KERNELS_SEAT"])) == "" {
		t.Error("singleuser.extraEnv.KERNELS_SEAT is empty: the doctor cell shows it as the student's seat")
	}
	for name, val := range env {
		if s, ok := val.(string); ok && strings.ContainsAny(s, "{}") {
			t.Errorf("singleuser.extraEnv.%s = %q: KubeSpawner reads braces in a value as a template ({username}) and fails on others", name, s)
		}
	}
	if cuda, ok := env["CUDA_VISIBLE_DEVICES"]; ok {
		t.Errorf("singleuser.extraEnv.CUDA_VISIBLE_DEVICES = %v: the device plugin gives the container its GPU as device 0; a fixed value would hide it", cuda)
	}
}

func TestValuesUserAndFolders(t *testing.T) {
	v, _ := loadValues(t)
	d := readDockerfile(t)
	user := regexp.MustCompile(`useradd .*--uid (\d+) --gid (\d+) .*jovyan`)
	var uid, gid string
	for _, run := range d.all("RUN") {
		if m := user.FindStringSubmatch(run); m != nil {
			uid, gid = m[1], m[2]
		}
	}
	if uid != "1000" {
		t.Fatalf("the Dockerfile creates no user jovyan with uid 1000 (useradd --uid 1000 --gid 100 ... jovyan): z2jh runs the server as uid 1000")
	}
	if got := quantity(get(v, "singleuser", "uid")); got != "" && got != uid {
		t.Errorf("singleuser.uid = %s, but the image's user has uid %s", got, uid)
	}
	if got := quantity(get(v, "singleuser", "fsGid")); got != "" && got != gid {
		t.Errorf("singleuser.fsGid = %s, but the image's user has group %s", got, gid)
	}
	home := str(get(v, "singleuser", "storage", "homeMountPath"))
	if home == "" {
		home = "/home/jovyan" // the chart's default
	}
	if dir := str(get(v, "hub", "config", "KubeSpawner", "notebook_dir")); dir != home {
		t.Errorf("hub.config.KubeSpawner.notebook_dir = %q: want the student's home %s (otherwise Jupyter serves the image's WORKDIR, the read-only project)", dir, home)
	}
	if u := str(get(v, "singleuser", "defaultUrl")); !strings.HasSuffix(strings.TrimSuffix(u, "/"), "/"+lessonsFolder) {
		t.Errorf("singleuser.defaultUrl = %q: want the student's folder of notebooks, .../%s", u, lessonsFolder)
	}
}

func TestValuesAuthentication(t *testing.T) {
	v, raw := loadValues(t)
	class := str(get(v, "hub", "config", "JupyterHub", "authenticator_class"))
	switch class {
	case "":
		t.Error("hub.config.JupyterHub.authenticator_class is not set: the chart's default is the dummy authenticator (any name, any password)")
	case "dummy", "shared-password":
		t.Errorf("hub.config.JupyterHub.authenticator_class = %s by default: a real class needs its own accounts (github, generic-oauth, ...)", class)
	}
	if users, _ := get(v, "hub", "config", "Authenticator", "allowed_users").([]any); len(users) == 0 {
		if get(v, "hub", "config", "GitHubOAuthenticator", "allowed_organizations") == nil {
			t.Error("hub.config.Authenticator.allowed_users lists nobody: list the students (or allow a GitHub organization)")
		}
	}
	// Every weak choice, even commented out, comes with a plain warning just above it.
	lines := strings.Split(raw, "\n")
	weak := regexp.MustCompile(`authenticator_class:\s*(dummy|shared-password)`)
	for i, line := range lines {
		if !weak.MatchString(line) {
			continue
		}
		warned := false
		for j := max(0, i-8); j < i; j++ {
			warned = warned || strings.Contains(lines[j], "WARNING")
		}
		if !warned {
			t.Errorf("hub/values.yaml:%d: %s without a WARNING comment in the lines above", i+1, strings.TrimSpace(line))
		}
	}
}

// hookScript is the postStart hook's shell script (the command sh -c SCRIPT).
func hookScript(t *testing.T, v map[string]any) string {
	t.Helper()
	cmd, _ := get(v, "singleuser", "lifecycleHooks", "postStart", "exec", "command").([]any)
	if len(cmd) != 3 || str(cmd[0]) != "sh" || str(cmd[1]) != "-c" {
		t.Fatalf("singleuser.lifecycleHooks.postStart.exec.command = %v: want [sh, -c, SCRIPT], the script copying the notebooks", cmd)
	}
	return str(cmd[2])
}

func TestValuesCopyHookNeverOverwrites(t *testing.T) {
	v, _ := loadValues(t)
	d := readDockerfile(t)
	script := hookScript(t, v)
	src := d.workdir(t) + "/notebooks"
	home := str(get(v, "singleuser", "storage", "homeMountPath"))
	if home == "" {
		home = "/home/jovyan"
	}
	dst := home + "/" + lessonsFolder
	for _, want := range []string{"src=" + src + " ", "dst=" + dst + "\n", `"$src"/*.ipynb`, `cp -n "$f" "$dst/"`} {
		if !strings.Contains(script, want) {
			t.Errorf("the copy hook has no %q:\n%s", want, script)
		}
	}
	for _, m := range regexp.MustCompile(`\bcp\b[^\n;|&]*`).FindAllString(script, -1) {
		if !strings.HasPrefix(m, "cp -n ") {
			t.Errorf("the copy hook runs %q: every copy must be no-clobber (cp -n), never overwriting a student's notebook", m)
		}
	}

	// Run it, on temporary folders standing in for the image's notebooks and the student's home.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the copy hook")
	}
	tmp := t.TempDir()
	fakeSrc, fakeDst := filepath.Join(tmp, "suite", "notebooks"), filepath.Join(tmp, "home", lessonsFolder)
	local := strings.ReplaceAll(strings.ReplaceAll(script, src, fakeSrc), dst, fakeDst)
	run := func() error {
		out, err := exec.Command(sh, "-c", local).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return "(missing)"
		}
		return string(b)
	}
	if err := os.MkdirAll(fakeSrc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(); err == nil {
		t.Error("the copy hook succeeded with no notebooks in the image's folder: want a failure that names it")
	}
	write(filepath.Join(fakeSrc, "00_setup.ipynb"), "image 00")
	write(filepath.Join(fakeSrc, "01_rwkv.ipynb"), "image 01")
	write(filepath.Join(fakeSrc, "notes.txt"), "not a notebook")
	if err := run(); err != nil {
		t.Fatalf("first start: %v", err)
	}
	copiesFigures(t, fakeSrc, fakeDst, run)
	for name, want := range map[string]string{"00_setup.ipynb": "image 00", "01_rwkv.ipynb": "image 01", "notes.txt": "(missing)"} {
		if got := read(filepath.Join(fakeDst, name)); got != want {
			t.Errorf("first start: %s/%s = %q, want %q", lessonsFolder, name, got, want)
		}
	}
	// The student edits one notebook and deletes the other; the image gets a new version of both.
	write(filepath.Join(fakeDst, "00_setup.ipynb"), "student's work")
	if err := os.Remove(filepath.Join(fakeDst, "01_rwkv.ipynb")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(fakeSrc, "00_setup.ipynb"), "image 00 v2")
	write(filepath.Join(fakeSrc, "01_rwkv.ipynb"), "image 01 v2")
	if err := run(); err != nil {
		t.Fatalf("next start: %v (a hook that fails stops the student's server)", err)
	}
	if got := read(filepath.Join(fakeDst, "00_setup.ipynb")); got != "student's work" {
		t.Errorf("next start: the student's edited notebook became %q: it must never be overwritten", got)
	}
	if got := read(filepath.Join(fakeDst, "01_rwkv.ipynb")); got != "image 01 v2" {
		t.Errorf("next start: the deleted notebook is %q, want it back from the image", got)
	}
	if err := run(); err != nil {
		t.Errorf("a start with every notebook there: %v (it must succeed: Kubernetes kills a container whose postStart hook fails)", err)
	}
}

func TestDockerfileServesZ2JH(t *testing.T) {
	d := readDockerfile(t)
	runs := strings.Join(d.all("RUN"), "\n")
	pin := regexp.MustCompile(`pip install [^\n]*\bjupyterhub==([0-9.]+)`).FindStringSubmatch(runs)
	switch {
	case pin == nil:
		t.Error("the Dockerfile does not pip install jupyterhub==VERSION: z2jh starts jupyterhub-singleuser")
	case pin[1] != chartHubVersion:
		t.Errorf("the image's jupyterhub is %s, chart %s's hub runs %s: keep them the same", pin[1], chartVersion, chartHubVersion)
	}
	if !regexp.MustCompile(`ln -s \S+/bin/jupyterhub-singleuser /usr/local/bin/jupyterhub-singleuser`).MatchString(runs) {
		t.Error("the Dockerfile puts no jupyterhub-singleuser on the PATH (/usr/local/bin)")
	}
	if !strings.Contains(runs, "JUPYTER_DATA_DIR=/usr/local/share/jupyter gonb --install") {
		t.Error("the Dockerfile does not register the gonb kernel system-wide (/usr/local/share/jupyter), where uid 1000 finds it")
	}
	if !regexp.MustCompile(`chown -R 1000:\d+ /opt/go`).MatchString(runs) {
		t.Error("the Dockerfile does not give /opt/go (Go's module and build caches, gonb) to uid 1000")
	}
	env := strings.Join(d.all("ENV"), " ")
	if !strings.Contains(env, "PATH=/opt/go/bin:") {
		t.Error("the Dockerfile's PATH lacks /opt/go/bin, where gonb, goimports and gopls are")
	}
	// docker compose runs the image as before.
	if cmd := d.all("CMD"); len(cmd) != 1 || cmd[0] != `["make", "notebooks", "IP=0.0.0.0", "PORT=8888"]` {
		t.Errorf("the Dockerfile's CMD = %v: docker compose (compose.yaml) relies on make notebooks on 0.0.0.0:8888", cmd)
	}
	compose, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(compose), "dockerfile: docker/Dockerfile") {
		t.Error("compose.yaml no longer builds docker/Dockerfile")
	}
}

// copiesFigures checks that the copy hook (run) also copies the diagrams the notebooks' markdown
// shows, notebooks/figures/*.svg, into the student's figures/ folder, without overwriting.
func copiesFigures(t *testing.T, src, dst string, run func() error) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(src, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	fig := filepath.Join(src, "figures", "00_coalescing.svg")
	if err := os.WriteFile(fig, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := run(); err != nil {
			t.Fatalf("a start with a diagram in figures/ (run %d): %v", i+1, err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "figures", "00_coalescing.svg")); err != nil || string(b) != "<svg/>" {
			t.Errorf("run %d: figures/00_coalescing.svg = %q, %v: want the image's copy", i+1, b, err)
		}
	}
}

# JupyterHub for a class on one machine: `make hub` (.ci/hub.sh) starts it with this file, after
# writing what it reads into $HUB_DIR:
#   seats.json        the students of the instructor's roster with their server's environment
#                     (CUDA_VISIBLE_DEVICES, KERNELS_SEAT), the instructors and the folder of the
#                     students' notebooks (go run ./cmd/classroom)
#   student-env.json  what every student's server needs to build and run the notebooks' cells: PATH
#                     (the project's Go toolchain and the gonb kernel), the module cache, the cgo and
#                     NVRTC variables .ci/env.sh picked, the mode, KERNELS_ROOT and JUPYTER_PATH
#   project/          a read-only copy of the project; its notebooks/ is what students get copies of
# Each student logs in with their system account's password (PAM; HUB_AUTH=shared-password is a
# plainly weaker choice for a trusted room) and gets their own single-user server, run as their own
# account, with their own copy of the notebooks in ~/cudalessons: every notebook missing there is
# copied in when the server starts, and none is ever overwritten.
import json
import os
import pwd
import subprocess

hub_dir = os.environ["HUB_DIR"]
with open(os.path.join(hub_dir, "seats.json")) as f:
    seats = json.load(f)
folder = seats["folder"]  # helpers/classroom.Folder: ~/cudalessons
with open(os.path.join(hub_dir, "student-env.json")) as f:
    student_env = json.load(f)
students = {s["name"]: s for s in seats["students"]}
state = os.path.join(hub_dir, "state")

c = get_config()  # noqa: F821 (JupyterHub defines it)
c.JupyterHub.ip = os.environ.get("HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%s" % os.environ.get("HUB_PROXY_API_PORT", "8001")
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "jupyterhub-proxy.pid")
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(state, "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # the hub's stop stops the students' servers (saved notebooks stay)

# Who logs in: the roster's students and instructors, nobody else.
c.Authenticator.allowed_users = set(students) | set(seats["instructors"])
c.Authenticator.admin_users = set(seats["instructors"])
auth = os.environ.get("HUB_AUTH", "pam")
if auth == "pam":
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.open_sessions = False
elif auth == "shared-password":
    # Every roster name logs in with one password: anyone who knows it can log in as any student.
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = os.environ["HUB_PASSWORD"]
else:
    raise SystemExit("HUB_AUTH=%s: want pam (the default) or shared-password" % auth)

# Each student's server: their own account (LocalProcessSpawner), their own notebooks, their seat.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.notebook_dir = "~/" + folder
c.Spawner.default_url = "/tree"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.env_keep = ["LANG", "LC_ALL"]
c.Spawner.environment = student_env


def seat(spawner):
    """Gives the user's server its seat (CUDA_VISIBLE_DEVICES, KERNELS_SEAT; an instructor sees every GPU)."""
    s = students.get(spawner.user.name)
    extra = s["env"] if s else {"KERNELS_SEAT": spawner.user.name + ": instructor (hub admin), every GPU of the machine"}
    spawner.environment = dict(spawner.environment, **extra)


def copy_notebooks(spawner):
    """Copies every notebook missing from the user's ~/cudalessons, and every diagram missing from its figures/, as the user, never overwriting."""
    pw = pwd.getpwnam(spawner.user.name)
    if not os.path.isdir(pw.pw_dir):
        raise RuntimeError("%s has no home folder (%s): create the account with one (useradd -m)" % (pw.pw_name, pw.pw_dir))
    src = os.path.join(hub_dir, "project", "notebooks")
    script = '{ [ -d "$1" ] || mkdir -m 700 "$1"; } && n=0 && for f in "$2"/*.ipynb; do [ -e "$1/${f##*/}" ] || { cp "$f" "$1/" && n=$((n+1)); }; done && { [ ! -d "$2/figures" ] || { mkdir -p "$1/figures" && for f in "$2"/figures/*.svg; do [ ! -f "$f" ] || [ -e "$1/figures/${f##*/}" ] || cp "$f" "$1/figures/" || exit 1; done; }; } && echo "$n"'
    done = subprocess.run(
        ["/bin/sh", "-c", script, "copy", os.path.join(pw.pw_dir, folder), src],
        user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd=pw.pw_dir,
        env={"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir}, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError("copying the notebooks into %s/%s: %s" % (pw.pw_dir, folder, done.stderr.strip()))
    spawner.log.info("cudalessons: %s notebooks copied into %s's ~/%s", done.stdout.strip(), pw.pw_name, folder)


def pre_spawn(spawner):
    seat(spawner)
    copy_notebooks(spawner)


c.Spawner.pre_spawn_hook = pre_spawn

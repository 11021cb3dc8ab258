# JupyterHub for a workshop on one machine: `make hub` (as root) starts it on 127.0.0.1.
#
# Each learner logs in with their system account (PAM) and gets the learner's lab exactly as `make lab`
# serves it: their own copies of the chapters in ~/work (made on first spawn by the Makefile's `work`
# target, run as the learner: a file already there is never overwritten), the same server flags (the
# Makefile hands them over as COURSE_LEARNER_FLAGS), nbgrader's instructor extensions off. Their labs
# share the machine's cores under the lab's rank budget (course_lib/lab/budget.py), set here.
#
# Settings (environment variables, all optional; `make hub` passes the ones it knows):
#   COURSE_REPO              the repository (set by make)
#   COURSE_HUB_PORT          the hub's address is 127.0.0.1:PORT (set by make: HUB_PORT; PORT+1 and PORT+2
#                            serve the hub's API and the proxy's, on 127.0.0.1 too)
#   COURSE_HUB_DIR           the hub's state: database, cookie secret (generated on first start, mode 600),
#                            the lab budget folder (set by make: HUB_DIR)
#   COURSE_HUB_USERS         comma-separated accounts allowed to log in (default: members of group `course`)
#   COURSE_HUB_ADMINS        comma-separated hub admins (the instructors)
#   COURSE_HUB_API_TOKEN     a token for scripts (nbgrader automation, the tests): the admin role
#   COURSE_NBGRADER_EXCHANGE nbgrader's exchange folder (default HUB_DIR/exchange)
#   COURSE_LAB_RANKS_PER_USER, COURSE_LAB_RANKS_PER_SERVER, COURSE_LAB_BUDGET_WAIT_S   the lab's budget
#   COURSE_HUB_MODE          graded (default: learners get course_lib/hub_class.py's learner copy, no chapters
#                            copied into ~/work, they fetch them; solutions/ and the key closed) or self-study
#   COURSE_HUB_CPUS, COURSE_HUB_MEMORY_MB, COURSE_HUB_TASKS   each learner server's limits (course_lib/hub_limits.py)
import json
import os
import pwd
import shlex
import subprocess
import sys

from course_lib import hub_class, hub_limits, instructor
from course_lib.lab import budget

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

REPO = os.environ["COURSE_REPO"]
STATE = os.path.abspath(os.environ.get("COURSE_HUB_DIR", "."))
BIN = os.path.dirname(sys.executable)

PORT = int(os.environ.get("COURSE_HUB_PORT", "8000"))
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = PORT
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = PORT + 1  # the hub's own API, behind the proxy
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
c.JupyterHub.db_url = f"sqlite:///{os.path.join(STATE, 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(STATE, "jupyterhub.pid")
# The proxy: configurable-http-proxy's Python implementation (PyPI), so no Node.js is needed; the hub
# starts it, with an auth token it generates, and stops it.
c.ConfigurableHTTPProxy.command = [os.path.join(BIN, "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = os.path.join(STATE, "jupyterhub-proxy.pid")

# Who may log in: system accounts (PAM).
c.JupyterHub.authenticator_class = "pam"
users = {u for u in os.environ.get("COURSE_HUB_USERS", "").split(",") if u}
if users:
    c.Authenticator.allowed_users = users
else:
    c.PAMAuthenticator.allowed_groups = {"course"}
c.Authenticator.admin_users = {u for u in os.environ.get("COURSE_HUB_ADMINS", "").split(",") if u}
if os.environ.get("COURSE_HUB_API_TOKEN"):
    c.JupyterHub.services = [{"name": "course-admin", "api_token": os.environ["COURSE_HUB_API_TOKEN"]}]
    c.JupyterHub.load_roles = [{"name": "admin", "services": ["course-admin"]}]

# A graded class (the default): learners import the course from a copy without solutions/, the answer key or
# sealed keys, and the repository's solutions/ and key are closed to them (course_lib/hub_class.py).
MODE = os.environ.get("COURSE_HUB_MODE", "graded")
if MODE not in ("graded", "self-study"):
    sys.exit(f"error: COURSE_HUB_MODE must be graded or self-study, got {MODE!r}")
LEARNER_COURSE = hub_class.set_up(REPO, STATE) if MODE == "graded" else None

# Each learner's server: the learner's lab, run as the learner, in its own control groups (CPU, memory, tasks)
# made by the hub as root before the server drops to the learner's uid: nothing the learner runs can lift them.
try:
    LIMITS = hub_limits.limits_from_env()
except ValueError as exc:
    sys.exit(f"error: {exc}")
LIMITS_KIND, LIMITS_SAID = hub_limits.available()
print(f"[course hub] {LIMITS_SAID} (cpus={LIMITS.cpus:g}, memory={LIMITS.memory_mb} MB, tasks={LIMITS.tasks})",
      flush=True)

from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402


class LimitedSpawner(LocalProcessSpawner):
    """The local spawner, with the server's process put in the learner's groups before it becomes the learner."""

    def make_preexec_fn(self, name):
        drop = super().make_preexec_fn(name)
        folders = hub_limits.prepare(name, LIMITS)

        def preexec():
            hub_limits.enter(folders)
            drop()
        return preexec


c.JupyterHub.spawner_class = LimitedSpawner
def _runnable_by_all(path) -> bool:
    """True when every user can run ``path`` (it, and each folder on its real path, is o+x)."""
    real = os.path.realpath(path)
    parts = [real] + [os.path.dirname(real)]
    while parts[-1] != os.path.dirname(parts[-1]):
        parts.append(os.path.dirname(parts[-1]))
    return all(os.stat(p).st_mode & 0o001 for p in parts)


# The learners' interpreter: the course's .venv, unless COURSE_HUB_PYTHON names another one that sees
# the same packages (a .venv built on a Python under /root, as pyenv installs it, is not runnable by them).
LEARNER_PYTHON = os.environ.get("COURSE_HUB_PYTHON") or os.path.join(BIN, "python")
if not _runnable_by_all(LEARNER_PYTHON):
    sys.exit(f"error: learners cannot run {LEARNER_PYTHON} (it is {os.path.realpath(LEARNER_PYTHON)}, under a "
             "folder they may not enter): build .venv with a Python outside /root (make clean; make hub "
             "PYTHON=/usr/bin/python3), or set COURSE_HUB_PYTHON")
c.Spawner.cmd = [LEARNER_PYTHON, "-m", "jupyterhub.singleuser"]
# make lab's flags, but with nbgrader's assignment_list server extension on: see the Assignments tab below
ASSIGNMENT_LIST_OFF = "--ServerApp.jpserver_extensions=nbgrader.server_extensions.assignment_list=False"
c.Spawner.args = [flag for flag in shlex.split(os.environ.get("COURSE_LEARNER_FLAGS", "")) if flag != ASSIGNMENT_LIST_OFF]
c.Spawner.notebook_dir = "~/work"
c.Spawner.default_url = os.environ.get("COURSE_LEARNER_URL", "/lab/tree/00_why_communication.ipynb")
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180

# nbgrader's exchange: one folder (mode 1777) the instructor releases into and collects from; every
# learner's nbgrader (fetch, submit, fetch_feedback) finds the course and the exchange through the
# nbgrader_config.py written here, on their Jupyter config path. The instructor's course must name the
# same exchange: COURSE_NBGRADER_EXCHANGE=<this folder> python -m course_lib nbgrader init course/
EXCHANGE = str(instructor.make_exchange(os.environ.get(instructor.EXCHANGE_ENV) or os.path.join(STATE, "exchange")))
LEARNER_CONFIG = os.path.join(STATE, "learner-config")
os.makedirs(LEARNER_CONFIG, exist_ok=True)
os.chmod(LEARNER_CONFIG, 0o755)
with open(os.path.join(LEARNER_CONFIG, "nbgrader_config.py"), "w") as handle:
    handle.write(instructor.learner_config(EXCHANGE, c.Spawner.notebook_dir))
# nbgrader's Assignments tab (Nbgrader > Assignment List): on the hub there is an exchange, so, unlike `make lab`
# alone, the learner's lab lists the released chapters with Fetch and Submit buttons (the assignment_list server
# extension, kept on above, and these JupyterLab plugins; Formgrader, Create Assignment, the course list and
# Validate, whose server extensions stay off, stay off). This page config overrides the learner settings' one.
os.makedirs(os.path.join(LEARNER_CONFIG, "labconfig"), exist_ok=True)
with open(os.path.join(LEARNER_CONFIG, "labconfig", "page_config.json"), "w") as handle:
    json.dump({"disabledExtensions": {"@jupyter/nbgrader": False, **{f"@jupyter/nbgrader:{plugin}": True for plugin in (
        "formgrader", "create-assignment", "course-list", "validate-assignment")}}}, handle, indent=1)

BUDGET_DIR = budget.make_dir(os.path.join(STATE, "lab-budget"))
per_user, per_server = budget.default_limits()
c.Spawner.environment = {
    # another interpreter (COURSE_HUB_PYTHON) still finds .venv's Jupyter extensions, settings and kernels
    "JUPYTER_CONFIG_PATH": os.pathsep.join([LEARNER_CONFIG, os.path.join(sys.prefix, "etc", "jupyter")]),
    "JUPYTER_PATH": os.path.join(sys.prefix, "share", "jupyter"),
    budget.DIR_ENV: BUDGET_DIR,
    budget.USER_ENV: os.environ.get(budget.USER_ENV, str(per_user)),
    budget.SERVER_ENV: os.environ.get(budget.SERVER_ENV, str(per_server)),
    budget.WAIT_ENV: os.environ.get(budget.WAIT_ENV, str(budget.DEFAULT_WAIT_S)),
}
if LEARNER_COURSE is not None:  # graded: course_lib from the learners' copy, checks in graded mode
    c.Spawner.environment.update(PYTHONPATH=str(LEARNER_COURSE), COURSE_LIB_MODE="graded")


def copy_chapters(spawner):
    """The learner's home is private (0700); in self-study ~/work gets each chapter it lacks (the Makefile's
    `work` target, run as the learner); in a graded class learners fetch the released chapters instead (one
    copy of each, the one they submit), so only the empty ~/work is made."""
    account = pwd.getpwnam(spawner.user.name)
    hub_class.private_home(account.pw_dir)
    work = os.path.join(account.pw_dir, "work")
    if MODE == "graded":
        if not os.path.isdir(work):
            os.mkdir(work, 0o700)
            os.chown(work, account.pw_uid, account.pw_gid)
        return
    done = subprocess.run(["make", "--no-print-directory", "-C", REPO, "work", f"WORK={work}"],
                          user=account.pw_uid, group=account.pw_gid, extra_groups=[],
                          env={"PATH": os.environ["PATH"], "HOME": account.pw_dir}, cwd=account.pw_dir,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"copying the chapters into {work} failed: {done.stderr.strip()[-500:]}")
    for line in done.stdout.splitlines():
        spawner.log.info("%s: %s", spawner.user.name, line)


c.Spawner.pre_spawn_hook = copy_chapters

"""Browser test: the student notebooks in real JupyterLab, driven in headless Chromium.

For every notebook in notebooks/ that shows a live explorer, this test starts JupyterLab on
127.0.0.1 (token on, throw-away config, runtime, settings and workspace directories), opens a copy
of the notebook in Debian's Chromium through Playwright (``executable_path``; Playwright never
downloads a browser here), runs all cells from the Run menu, and checks that

* every code cell ran and none shows an error,
* the explorer (``.course-explorer``) renders at least one ipywidgets slider,
* the window is 900 px wide with JupyterLab's file browser open (issue 26.6: the output area is then
  about 470 px), and every explorer fits it: each control row, its slider handle and the readout lie
  inside the output area and the window,
* every explorer's sliders have tracks of at least ``widgets.MIN_NARROW_TRACK_PX``, and dragging each
  with the mouse changes its value; the drags change the readout (``.course-readout``), which stays
  visible, and redraw the plot (its ``<img>``); the track widths and the output area's width go to
  artifacts/browser/<notebook-stem>.track_widths.json,
* saved, closed with its kernel shut down and opened again, the notebook shows every explorer's static
  view (plot and readout at the defaults), never "Error displaying widget: model not found"
  (``course_lib.notebook_save``, the lab's pre-save hook),
* the page logs no JavaScript error (console ``error`` messages and uncaught ``pageerror``s).

Screenshots go to artifacts/browser/: <notebook-stem>.explorer<N>.png (each explorer after its drags),
<notebook-stem>.reopened.png (the first static view after reopening) and <notebook-stem>.png (the
page at the end: the reopened notebook, or where a failure stopped). New chapters are covered as soon as their student notebook calls
an explorer.

Beside the notebooks, at the same 900 px window: ``make lab-instructor``'s *Nbgrader > Formgrader* lists the
course's chapter and releases it from its button (formgrader.png, formgrader.manual_grading.png); on the real
hub (root only) a learner logs in through the hub's form and fetches and submits a released chapter from the
*Assignments* tab (hub_assignments.released.png, hub_assignments.submitted.png); an exported slide deck and an
exported page run with the network blocked (slides_offline.png, export_maths_offline.png).

Chromium missing: the test skips, or fails when COURSE_REQUIRE_BROWSER=1 (set by .ci/run).
Run it alone with ``.venv/bin/python -m pytest -m browser tests/test_browser.py``.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from course_lib import widgets

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "browser"
REQUIRE_BROWSER = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
PRE_SAVE_HOOK = "course_lib.notebook_save.pre_save_hook"
WINDOW = {"width": 900, "height": 1000}  # issue 26.6: a 900 px window with the file browser open

# Explorers are called from a code cell, e.g. ``gradients.gradient_exchange_explorer()`` or
# ``widgets.explorer(draw, controls)``; they display a VBox with the CSS class course-explorer.
EXPLORER_CALL = re.compile(r"\b\w*explorer\s*\(")

# Generous limits for a slow, shared 2-core machine; every wait is on an explicit condition.
SERVER_START_S = 180
PAGE_LOAD_S = 180
RUN_ALL_S = 420
WIDGET_S = 60
MS = 1000

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-proxy-server",  # the server is on 127.0.0.1; never route it through a proxy
]


def _notebooks_with_explorers():
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        if any(c.get("cell_type") == "code" and EXPLORER_CALL.search("".join(c.get("source", "")))
               for c in cells):
            found.append(path)
    return found


NOTEBOOKS = _notebooks_with_explorers()


def _missing(reason):
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (COURSE_REQUIRE_BROWSER=1, so this fails instead of skipping)")
    pytest.skip(reason)


def _find_chromium():
    """Debian's Chromium; COURSE_CHROMIUM names another binary (and, pointed nowhere, tests the skip)."""
    override = os.environ.get("COURSE_CHROMIUM")
    candidates = (override,) if override else ("/usr/bin/chromium", shutil.which("chromium"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


# --------------------------------------------------------------------------- JupyterLab server

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The sandbox has proxy variables for package registries; the local server must be reached directly.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LabServer:
    """A JupyterLab subprocess on 127.0.0.1 with its own token and throw-away state."""

    def __init__(self, base: Path):
        self.base = base
        self.root = base / "root"            # notebooks are copied here; the repository stays clean
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "jupyterlab.log"
        self.proc = None
        self._log = None

    # -- REST helpers
    def api(self, path, method="GET"):
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with _DIRECT.open(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, chars=4000):
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    # -- lifecycle
    def start(self):
        dirs = {name: self.base / name for name in ("config", "data", "runtime", "settings", "workspaces")}
        for d in [self.root, *dirs.values()]:
            d.mkdir(parents=True, exist_ok=True)
        # No announcements, update checks or PyPI extension listings: nothing reaches for the network.
        (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps({
            "LabApp": {
                "news_url": None,
                "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
                "extension_manager": "readonly",
            },
        }))
        user_settings = {
            # fetchNews "false" also stops the toast that asks whether to fetch news.
            "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
                {"fetchNews": "false", "checkForUpdates": False},
            "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
            # The test's own File > Save is the only write: an autosave could race with reading it back.
            "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
            # Attach every cell to the DOM, so the test can see each cell's prompt and outputs.
            "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        }
        for rel, value in user_settings.items():
            path = dirs["settings"] / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))

        env = dict(os.environ)
        for var in ("JUPYTER_TOKEN", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PREFER_ENV_PATH"):
            env.pop(var, None)
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            IPYTHONDIR=str(self.base / "ipython"),
            MPLCONFIGDIR=str(self.base / "matplotlib"),
            PYTHONUNBUFFERED="1",
            NO_PROXY="127.0.0.1,localhost",
            no_proxy="127.0.0.1,localhost",
        )
        cmd = [
            sys.executable, "-m", "jupyterlab",
            "--no-browser",
            "--allow-root",  # CI containers run as root; harmless otherwise
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.terminals_enabled=False",
            f"--IdentityProvider.token={self.token}",
            f"--ContentsManager.pre_save_hook={PRE_SAVE_HOOK}",  # as the Makefile's lab targets set it
            # the learner's lab defaults (the Makefile's LEARNER_FLAGS): widget state saved for the hook
            f"--LabApp.app_settings_dir={ROOT / 'jupyter' / 'learner-settings'}",
        ]
        self._log = open(self.log_path, "wb")
        # Own session: teardown can signal the server without touching pytest.
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:
                self.api("status")
                # /lab answers only once the lab extension is loaded.
                with _DIRECT.open(f"{self.url}/lab?token={self.token}", timeout=10) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab not ready after {SERVER_START_S} s:\n{self.log_tail()}")
            time.sleep(0.5)

    def shutdown_kernels(self):
        try:
            for session in self.api("sessions"):
                self.api(f"sessions/{session['id']}", method="DELETE")
            for kernel in self.api("kernels"):
                self.api(f"kernels/{kernel['id']}", method="DELETE")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            pass  # the server is gone or going; stop() below still kills every child

    def stop(self):
        if self.proc is None:
            return
        try:
            import psutil
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except Exception:  # psutil missing or the server already exited
            children = []
        if self.proc.poll() is None:
            self.shutdown_kernels()
            self.proc.send_signal(signal.SIGTERM)  # jupyter_server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for child in children:  # kernels run in their own sessions: end any that outlived the server
            try:
                child.kill()
            except Exception:
                pass
        if self._log:
            self._log.close()
        self.proc = None


@pytest.fixture(scope="module")
def chromium():
    path = _find_chromium()
    if path is None:
        _missing("Chromium is not installed: run `make browser-deps` (installs Debian's 'chromium' package "
                 "when run as root with apt-get), or install Chromium yourself (Debian/Ubuntu: "
                 "`sudo apt install chromium`), or set COURSE_CHROMIUM to a Chromium binary")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("the playwright Python package is not installed (pip install -e '.[dev]')")
    return path


@pytest.fixture(scope="module")
def lab(chromium, tmp_path_factory):
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield server.start()
    finally:
        server.stop()


# --------------------------------------------------------------------------- the test

_PROMPTS_JS = """
() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  return panel ? [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim()) : [];
}
"""
NUMBERED = re.compile(r"^\[\d+\]:$")


def _code_cell_count(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(c["cell_type"] == "code" for c in cells)


def _kernels_idle(lab):
    kernels = lab.api("kernels")
    return bool(kernels) and all(k.get("execution_state") == "idle" for k in kernels)


def _wait_for_run_all(page, lab, n_code):
    """Wait until no cell is queued or running and the kernel is idle; return the prompts.

    After an error the kernel aborts the queued cells: they go back to ``[ ]:`` and never get a
    number, so "every cell numbered" alone would wait forever on a failing notebook.
    """
    deadline = time.monotonic() + RUN_ALL_S
    settled = 0
    started = False
    while time.monotonic() < deadline:
        prompts = page.evaluate(_PROMPTS_JS)
        # Run All marks every cell queued ("[*]:") at once; until then nothing has started.
        started = started or any(p != "[ ]:" for p in prompts)
        if not started:
            page.wait_for_timeout(500)
            continue
        busy = len(prompts) != n_code or any(p == "[*]:" for p in prompts)
        # Two calm polls in a row: a cell's prompt turns to a number just before the kernel idles.
        settled = settled + 1 if not busy and _kernels_idle(lab) else 0
        if settled >= 2:
            return prompts
        page.wait_for_timeout(1000)
    what = "finish" if started else "start"
    raise AssertionError(f"Run All did not {what} in {RUN_ALL_S} s; prompts: {page.evaluate(_PROMPTS_JS)}")


def _saved_errors(path, n_code, deadline):
    """Error outputs of the notebook as saved from JupyterLab, read back from disk.

    Read from the file, not the contents API: a GET while the server is still writing the file
    interferes with its atomic save. Until the save is complete the file may be partial or still the
    unexecuted copy, so wait until it parses and every code cell has an execution count.
    """
    while True:
        try:
            code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
            if len(code) == n_code and all(c.get("execution_count") for c in code):
                break
        except (OSError, ValueError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} was not saved with every code cell executed")
        time.sleep(0.5)
    return [f"cell [{c['execution_count']}]: {o.get('ename')}: {o.get('evalue')}"
            for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no notebook in notebooks/ calls an explorer yet"))], ids=lambda p: p.stem if p else "none")
def test_notebook_in_jupyterlab(notebook, chromium, lab, tmp_path, record_property):
    from playwright.sync_api import sync_playwright

    shutil.copy(notebook, lab.root / notebook.name)
    n_code = _code_cell_count(notebook)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"{notebook.stem}.png"
    screenshot.unlink(missing_ok=True)
    errors = []

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=chromium, headless=True,
            args=CHROMIUM_ARGS, viewport=WINDOW, timeout=120 * MS)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(WIDGET_S * MS)
            page.on("console", lambda m: errors.append(f"console.error: {m.text} @ {m.location}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            try:
                _exercise_notebook(page, lab, notebook, n_code)
            finally:
                try:
                    page.screenshot(path=str(screenshot))
                    record_property("screenshot", str(screenshot))
                    print(f"screenshot: {screenshot}")
                except Exception as exc:  # never hide the real failure behind a screenshot problem
                    print(f"screenshot failed: {exc}")
        finally:
            context.close()
            lab.shutdown_kernels()

    assert not errors, "JavaScript errors in the page:\n" + "\n".join(errors)


def _menu(page, menu, command):
    """Open a main-menu menu and click the item bound to a JupyterLab command."""
    page.locator("#jp-MainMenu .lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click()


MIN_TRACK_PX = widgets.MIN_NARROW_TRACK_PX  # a track a mouse can use, in an output area down to 400 px

_INSIDE_JS = """
(el, area) => {
  const a = area.getBoundingClientRect(), r = el.getBoundingClientRect();
  return r.width > 0 && r.left >= a.left - 1 && r.right <= a.right + 1 && r.right <= window.innerWidth;
}
"""

_CHANGED_JS = "([el, old]) => el.textContent !== old && el.textContent.trim().length > 0"


def _drag_every_slider(page, box, name):
    """Drag each slider of one explorer with the mouse; returns {label: track width px}.

    Each drag must change the slider's own value readout; over all drags the explorer's readout
    and its plot (the <img> of its Image widget) must change too.
    """
    sliders = box.locator(".widget-slider")
    sliders.first.wait_for(timeout=WIDGET_S * MS)
    # one output: the live widget, not a static copy of the plot before it (issue 18.4); the cell may
    # print text too, but shows the explorer's plot once
    plots = box.evaluate("el => el.closest('.jp-OutputArea').querySelectorAll('img').length")
    assert plots == 1, f"{name}: the explorer's cell shows {plots} plots, not one"
    readout = box.locator(".course-readout")
    page.wait_for_function("el => el.textContent.trim().length > 0", arg=readout.element_handle(),
                           timeout=WIDGET_S * MS)
    image = box.locator("img").first
    image.wait_for(timeout=WIDGET_S * MS)
    text_before, image_before = readout.text_content(), image.get_attribute("src")
    area = box.element_handle().evaluate_handle("el => el.closest('.jp-OutputArea-output')")
    widths = {"output area": round(area.evaluate("a => a.getBoundingClientRect().width"))}
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        slider.scroll_into_view_if_needed()
        label = f"{name} {slider.locator('.widget-label').first.text_content().strip()}"
        track = slider.locator(".noUi-target").first.bounding_box()
        widths[label] = round(track["width"])
        # the whole row fits the output area: its value readout and its handle at either end are reachable
        assert slider.evaluate(_INSIDE_JS, area), f"{label}: the control row overflows the output area"
        handle = slider.locator(".noUi-handle").first.bounding_box()
        value = slider.locator(".widget-readout").first
        old = value.text_content() if value.count() else None
        hx, hy = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
        left_half = hx < track["x"] + track["width"] / 2
        target = track["x"] + track["width"] * (0.8 if left_half else 0.2)
        page.mouse.move(hx, hy)
        page.mouse.down()
        page.mouse.move(target, hy, steps=8)
        page.mouse.up()
        if old is not None:
            page.wait_for_function(_CHANGED_JS, arg=[value.element_handle(), old], timeout=WIDGET_S * MS)
    page.wait_for_function(_CHANGED_JS, arg=[readout.element_handle(), text_before], timeout=WIDGET_S * MS)
    page.wait_for_function(
        "([img, old]) => img.complete && img.getAttribute('src') !== old",
        arg=[image.element_handle(), image_before], timeout=WIDGET_S * MS)
    # the readout is visible and inside the output area; so is the plot, scaled to its width
    readout.scroll_into_view_if_needed()
    assert readout.is_visible() and readout.evaluate(_INSIDE_JS, area), f"{name}: the readout is hidden or cut off"
    assert image.evaluate(_INSIDE_JS, area), f"{name}: the plot overflows the output area"
    return widths


def _exercise_notebook(page, lab, notebook, n_code):
    # A workspace of its own: the server's default workspace would reopen the notebooks of earlier
    # tests, whose saved widget views point at models of kernels already shut down.
    workspace = f"test-{notebook.stem}-{secrets.token_hex(4)}"
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook.name}?token={lab.token}",
              timeout=PAGE_LOAD_S * MS)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    panel.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=PAGE_LOAD_S * MS)
    # The kernel must be connected before Run All: JupyterLab silently skips code cells run while
    # the notebook has no kernel yet. The status bar's kernel item reads "<kernel> | Idle" only once
    # the kernel is connected and idle (the toolbar's execution indicator says "idle" from the start).
    page.locator(f'#jp-main-statusbar .jp-StatusBar-TextItem[title="Change kernel for {notebook.name}"]',
                 has_text=re.compile(r"\| Idle$")).wait_for(timeout=PAGE_LOAD_S * MS)

    _open_file_browser(page)
    _menu(page, "Run", "runmenu:run-all")  # Run > Run All Cells, as a learner would

    prompts = _wait_for_run_all(page, lab, n_code)
    not_run = [i for i, p in enumerate(prompts) if not NUMBERED.match(p)]
    # Save (to the temporary copy) and read back the outputs: in the DOM an error traceback and a
    # warning are both rendered as stderr, but the saved notebook says output_type "error".
    _menu(page, "File", "docmanager:save")
    errors = _saved_errors(lab.root / notebook.name, n_code, time.monotonic() + WIDGET_S) if not not_run else []
    assert not not_run and not errors, (
        f"{notebook.name}: not every cell ran without error; code cells not run (0-based): {not_run}; "
        f"errors: {errors}; cell outputs:\n" + "\n".join(panel.locator(".jp-OutputArea-output").all_inner_texts())[-3000:])

    # Every live explorer: drag each slider with the mouse; its track is wide enough to use.
    boxes = panel.locator(".course-explorer")
    boxes.first.wait_for(timeout=WIDGET_S * MS)
    assert page.locator("#filebrowser").is_visible(), "the file browser must be open (issue 26.6's layout)"
    widths = {}
    for b in range(boxes.count()):
        widths.update(_drag_every_slider(page, boxes.nth(b), f"{notebook.stem}[{b}]"))
        _wait_idle(page, lab)  # the last drag's plot has arrived: the screenshot shows one state
        boxes.nth(b).screenshot(path=str(ARTIFACTS / f"{notebook.stem}.explorer{b}.png"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{notebook.stem}.track_widths.json").write_text(json.dumps(widths, indent=1))
    print(f"slider track widths (px): {widths}")
    narrow = {k: w for k, w in widths.items() if w < MIN_TRACK_PX}
    assert not narrow, f"slider tracks narrower than {MIN_TRACK_PX} px: {narrow}"
    box = boxes.first
    box.evaluate("el => el.scrollIntoView({block: 'start'})")
    _reopen_shows_static_views(page, lab, notebook, boxes.count())


def _wait_idle(page, lab):
    """Until the kernel has been idle for two polls in a row (every event handled, every image sent)."""
    deadline, calm = time.monotonic() + WIDGET_S, 0
    while calm < 2 and time.monotonic() < deadline:
        calm = calm + 1 if _kernels_idle(lab) else 0
        page.wait_for_timeout(500)


def _open_file_browser(page):
    """Open JupyterLab's file browser in the left sidebar (a learner's usual layout) if it is closed."""
    browser = page.locator("#filebrowser")
    if not browser.is_visible():
        page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click()
    browser.wait_for(state="visible", timeout=WIDGET_S * MS)


def _reopen_shows_static_views(page, lab, notebook, n_explorers):
    """Save, shut the kernel down, open the notebook again: each explorer shows its static view."""
    _menu(page, "File", "docmanager:save")
    path = lab.root / notebook.name
    deadline = time.monotonic() + WIDGET_S
    while True:  # the saved file: every explorer's output keeps its static view and lost its dead widget view
        try:
            outputs = [o for c in json.loads(path.read_text(encoding="utf-8"))["cells"] for o in c.get("outputs", [])
                       if "course-static-caption" in "".join(o.get("data", {}).get("text/html", ""))]
            if len(outputs) >= n_explorers and not any(
                    "application/vnd.jupyter.widget-view+json" in o["data"] for o in outputs):
                break
        except (OSError, ValueError, KeyError):
            pass
        assert time.monotonic() < deadline, f"{notebook.name}: not saved with static explorer views"
        time.sleep(0.5)
    lab.shutdown_kernels()
    workspace = f"reopen-{notebook.stem}-{secrets.token_hex(4)}"
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook.name}?token={lab.token}",
              timeout=PAGE_LOAD_S * MS)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    captions = panel.locator(".course-static-caption")
    captions.first.wait_for(timeout=PAGE_LOAD_S * MS)
    assert captions.count() == n_explorers, f"{notebook.name}: {captions.count()} static views, {n_explorers} explorers"
    text = panel.inner_text()
    assert "Error displaying widget" not in text and "model not found" not in text
    first = captions.first.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')]")
    first.scroll_into_view_if_needed()
    assert first.locator("img").first.is_visible(), f"{notebook.name}: the static view shows no plot"
    first.screenshot(path=str(ARTIFACTS / f"{notebook.stem}.reopened.png"))


@pytest.mark.browser
@pytest.mark.slow
def test_exported_maths_renders_offline(chromium, tmp_path):
    """Issue 26.6: an exported page typesets its maths with no network (MathJax from the export folder)."""
    import nbformat
    from playwright.sync_api import sync_playwright

    from course_lib import export

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Maths offline\nThe bound $2(p-1)/p \\cdot n/B$ and\n\n"
                                      "$$t = \\alpha \\log_2 p + \\frac{n}{B}$$")])
    path = tmp_path / "97_maths.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "site"
    page_path = export.export_course(out, notebooks=[path], timeout=60, jobs=1)[0]["html"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requests = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=WINDOW)
            page.on("request", lambda r: requests.append(r.url))
            page.route(re.compile(r"^https?://"), lambda route: route.abort())  # offline: no CDN can answer
            page.goto(page_path.as_uri(), timeout=PAGE_LOAD_S * MS)
            page.wait_for_function("() => document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_SVG').length >= 2",
                                   timeout=WIDGET_S * MS)
            text = page.locator("body").inner_text()
            page.screenshot(path=str(ARTIFACTS / "export_maths_offline.png"))
        finally:
            browser.close()
    assert "$$" not in text and "\\frac" not in text, "raw TeX is showing"
    assert not [u for u in requests if u.startswith("http")], f"the page reached for the network: {requests}"


@contextlib.contextmanager
def _page(chromium, errors):
    """A fresh headless Chromium page at ``WINDOW`` whose uncaught page errors are appended to ``errors``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=WINDOW)
            page.set_default_timeout(WIDGET_S * MS)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            yield page
        finally:
            browser.close()


@pytest.mark.browser
@pytest.mark.slow
def test_formgrader_lists_the_course_in_the_instructors_lab(chromium, tmp_path):
    """Issue 26: ``make lab-instructor``, opened in the browser at 900 px: *Nbgrader > Formgrader* lists the
    course's chapter (never DataTables' "No data available"), with no set-up warning; its Release button
    puts the chapter in the course's exchange (status draft -> released), and *Manual Grading* lists it too.
    The real target on a free port, a one-chapter course inside the repository (removed after)."""
    from course_lib import instructor
    from tests.test_lab_command import _venv_is_current, start_make, stop_group, wait_for_url

    if not _venv_is_current():
        pytest.skip("needs the .venv that `make test` builds, newer than pyproject.toml (this test does not reinstall)")
    chapter = "00_why_communication"
    course = ROOT / "artifacts" / f"formgrader-browser-{os.getpid()}"
    port, log = _free_port(), tmp_path / "lab.log"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), NO_PROXY="127.0.0.1,localhost",
               no_proxy="127.0.0.1,localhost")
    env.pop("JUPYTER_CONFIG_PATH", None)
    env.pop(instructor.EXCHANGE_ENV, None)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    proc, errors = None, []
    try:
        instructor.init_course(course, [chapter])
        proc = start_make(["lab-instructor", f"PORT={port}", f"COURSE={course.relative_to(ROOT)}"], log, env)
        token = wait_for_url(proc, log, port)[1]
        with _page(chromium, errors) as page:
            page.goto(f"http://127.0.0.1:{port}/lab/workspaces/formgrader-{secrets.token_hex(4)}?token={token}",
                      timeout=PAGE_LOAD_S * MS)
            page.locator("#jp-MainMenu .lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).wait_for(
                timeout=PAGE_LOAD_S * MS)
            _menu(page, "Nbgrader", "nbgrader:open-formgrader")
            frame = page.frame_locator("#formgrader iframe")
            row = frame.locator("tr", has=frame.locator("td.name", has_text=chapter))
            row.wait_for(timeout=PAGE_LOAD_S * MS)
            listed = frame.locator("td.name").all_inner_texts()
            status = row.locator("td.status").inner_text().strip()
            body = frame.locator("body").inner_text()
            warnings = frame.locator("#warning-exchange, #warning-course-id, #warning-windows").count()
            page.screenshot(path=str(ARTIFACTS / "formgrader.png"))
            # Release from Formgrader (nbgrader's release_assignment into the course's exchange)
            row.locator("td.release a").click()
            frame.locator("#success-modal", has_text=f"Successfully released '{chapter}'").wait_for(
                timeout=PAGE_LOAD_S * MS)
            frame.locator("#success-modal button", has_text="OK").click()
            row.locator("td.status", has_text="released").wait_for(timeout=WIDGET_S * MS)
            frame.locator("a", has_text="Manual Grading").first.click()
            graded = frame.locator("table tbody tr", has_text=chapter)
            graded.first.wait_for(timeout=PAGE_LOAD_S * MS)
            gradebook = frame.locator("body").inner_text()
            page.screenshot(path=str(ARTIFACTS / "formgrader.manual_grading.png"))
        print(f"Formgrader lists {listed} (status {status!r}); Manual Grading lists {chapter}")
        assert [name.strip() for name in listed] == [chapter], listed
        assert status == "draft", f"{chapter} shows status {status!r} before its release"
        outbound = course / "exchange" / instructor.COURSE_ID / "outbound" / chapter / f"{chapter}.ipynb"
        assert outbound.is_file(), f"Formgrader's release put nothing in the exchange ({outbound})"
        assert "No data available" not in body and "No data available" not in gradebook
        assert warnings == 0, "Formgrader warns that the exchange or the course id is missing"
        assert not errors, errors
    finally:
        if proc is not None:
            stop_group(proc)
        shutil.rmtree(course, ignore_errors=True)


@pytest.mark.browser
@pytest.mark.slow
def test_exported_slides_work_offline(chromium, tmp_path):
    """Issue 26: an exported reveal.js deck runs with no network: reveal.js and MathJax from the export folder,
    the arrow key moves to the next slide, the maths is typeset."""
    import nbformat
    from playwright.sync_api import sync_playwright

    from course_lib import export

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Slides offline\nThe bound $2(p-1)/p \\cdot n/B$."),
        nbformat.v4.new_markdown_cell("## 1. A section\n$$t = \\alpha \\log_2 p + \\frac{n}{B}$$"),
        nbformat.v4.new_code_cell("print(6 * 7)"),
        nbformat.v4.new_markdown_cell("### 1.1 A subsection")])
    path = tmp_path / "96_slides.ipynb"
    nbformat.write(nb, path)
    deck = export.export_course(tmp_path / "site", notebooks=[path], timeout=60, jobs=1, slides=True)[0]["slides"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requests, errors = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=WINDOW)
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.route(re.compile(r"^https?://"), lambda route: route.abort())  # offline: no CDN can answer
            page.goto(deck.as_uri(), timeout=PAGE_LOAD_S * MS)
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=WIDGET_S * MS)
            total = page.evaluate("() => Reveal.getTotalSlides()")
            first = page.evaluate("() => Reveal.getIndices()")
            page.evaluate("() => Reveal.on('slidetransitionend', () => { window.courseSlideShown = true; })")
            page.keyboard.press("ArrowRight")
            page.wait_for_function("() => Reveal.getIndices().h === 1 && window.courseSlideShown", timeout=WIDGET_S * MS)
            page.wait_for_function("() => document.querySelectorAll('.MathJax, .MathJax_Display').length >= 2",
                                   timeout=WIDGET_S * MS)
            page.wait_for_function("() => MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running",
                                   timeout=WIDGET_S * MS)
            shown = page.evaluate("() => Reveal.getCurrentSlide().innerText").strip()
            font = page.evaluate("() => getComputedStyle(document.querySelector('.reveal')).fontFamily")
            page.screenshot(path=str(ARTIFACTS / "slides_offline.png"))
            deck_text = page.locator("body").inner_text()
        finally:
            browser.close()
    print(f"slides: {total} slides, started at {first}, arrow key to {shown.splitlines()[0]!r}; font {font}")
    assert total >= 3 and (first["h"], first["v"]) == (0, 0) and "a section" in shown.lower()
    assert "$$" not in shown and "\\frac" not in shown, "raw TeX is showing"
    assert "Math Processing Error" not in deck_text
    assert "Source Sans Pro" in font, "the theme's styles did not load"
    assert not errors, errors
    assert not [u for u in requests if u.startswith("http")], f"the deck reached for the network: {requests}"


@pytest.mark.browser
@pytest.mark.slow
def test_learner_fetches_and_submits_from_the_assignments_tab_on_the_hub(chromium, tmp_path, monkeypatch):
    """Issue 26 build 2, in the browser at 900 px: the instructor releases a chapter into the hub's exchange; a
    learner logs in through the hub's form (their system password), opens *Nbgrader > Assignment List*, sees
    the chapter among the released assignments, fetches it (it lands in ~/work, theirs) and submits it from
    the tab (it lands in the exchange's inbound, theirs). Real ``make hub``, a throwaway account (root only)."""
    from course_lib import instructor
    from tests import hub_harness

    chapter = "00_why_communication"
    password = secrets.token_urlsafe(12)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors = []
    try:
        with hub_harness.class_on_hub(tmp_path, 1, password=password) as (hub, users, homes, state):
            user = users[0]
            monkeypatch.setenv(instructor.EXCHANGE_ENV, str(state / "exchange"))
            course = instructor.init_course(tmp_path / "course", [chapter])
            instructor.nbgrader(course, "release_assignment", chapter)
            hub.start(user)
            with _page(chromium, errors) as page:
                page.goto(f"{hub.base}/hub/login?next=/user/{user}/lab/workspaces/assignments",
                          timeout=PAGE_LOAD_S * MS)
                page.fill("#username_input", user)
                page.fill("#password_input", password)
                page.click("#login_submit")
                page.locator("#jp-MainMenu .lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).wait_for(
                    timeout=PAGE_LOAD_S * MS)
                _menu(page, "Nbgrader", "nbgrader:open-assignment-list")
                released = page.locator("#released_assignments_list .list_item", has_text=chapter)
                released.wait_for(timeout=PAGE_LOAD_S * MS)
                page.screenshot(path=str(ARTIFACTS / "hub_assignments.released.png"))
                released.locator("button", has_text="Fetch").click()
                fetched = page.locator("#fetched_assignments_list", has_text=chapter)
                fetched.locator("button", has_text="Submit").wait_for(timeout=PAGE_LOAD_S * MS)
                fetched.locator("button", has_text="Submit").click()
                page.locator("#submitted_assignments_list .list_item", has_text=chapter).wait_for(
                    timeout=PAGE_LOAD_S * MS)
                page.screenshot(path=str(ARTIFACTS / "hub_assignments.submitted.png"))
            uid = hub_harness.pwd_uid(user)
            mine = homes / user / "work" / chapter / f"{chapter}.ipynb"
            inbound = list((state / "exchange" / instructor.COURSE_ID / "inbound").glob(f"{user}+{chapter}+*/{chapter}.ipynb"))
            print(f"{user}: fetched {mine.relative_to(homes)}, submitted {[str(p.relative_to(state)) for p in inbound]}")
            assert mine.is_file() and mine.stat().st_uid == uid, (
                "the fetched chapter is not the learner's, in ~/work: " +
                str(sorted(str(p) for p in (homes / user).rglob(f"{chapter}.ipynb"))))
            assert len(inbound) == 1 and inbound[0].stat().st_uid == uid, inbound
            instructor.nbgrader(course, "collect", chapter)
            assert (course / "submitted" / user / chapter / f"{chapter}.ipynb").is_file()
    except hub_harness.HubUnavailable as exc:
        pytest.skip(str(exc))
    assert not errors, errors


# A notebook of one explorer made with the shell (not a chapter's: this pins the shell's behaviour, not the
# catalog's), designed 11 in wide as the widest chapter figures are, with a description whose unit comes last.
_LIFECYCLE_CELL = """
import ipywidgets as w
from course_lib import style, widgets

def draw(ax, link_gb_s, gpus):
    counts = [2, 4, 8, 16, 32]
    line, = ax.plot(counts, [link_gb_s * c for c in counts], marker="o", label="aggregate, GB/s per direction")
    mark, = ax.plot([gpus], [link_gb_s * gpus], "D", label="this many GPUs")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs", fontsize=style.FONT_NORMAL)
    ax.set_ylabel("GB/s per direction", fontsize=style.FONT_NORMAL)
    ax.tick_params(labelsize=style.FONT_SMALL)
    ax.legend(fontsize=style.FONT_SMALL, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    def update(link_gb_s, gpus):
        line.set_ydata([link_gb_s * c for c in counts])
        mark.set_data([gpus], [link_gb_s * gpus])
        ax.relim()
        ax.autoscale_view()
    return update

explorer = widgets.explorer(
    draw, {"link_gb_s": widgets.link_speed_slider(450.0, 10, 2000, description="NVLink GB/s per GPU per direction"),
           "gpus": widgets.gpu_count_slider(8, options=(2, 4, 8, 16, 32))},
    readout=lambda link_gb_s, gpus: f"{gpus} GPUs at {link_gb_s:.3g} GB/s per direction each",
    title="Lifecycle", figsize=(11, 4.4))
"""

# Changes to an element's attribute or text, counted from now on (window.courseChanges[key]).
_COUNT_CHANGES_JS = """
([el, key]) => {
  window.courseChanges = window.courseChanges || {};
  window.courseChanges[key] = 0;
  new MutationObserver(() => { window.courseChanges[key] += 1; })
    .observe(el, {attributes: true, attributeFilter: ['src'], childList: true, characterData: true, subtree: true});
}
"""


def _kernel_pid(lab):
    import psutil
    for child in psutil.Process(lab.proc.pid).children(recursive=True):
        if any("ipykernel" in part for part in child.cmdline()):
            return child.pid
    raise AssertionError("no kernel process under the lab server")


def _restarted_banner(page, box, name):
    """The explorer says its kernel is gone: a banner that says to run the cell again, its controls
    stopped, no per-control red icons; returns the banner's text."""
    box.element_handle().wait_for_element_state("stable")
    page.wait_for_function("el => el.classList.contains('jupyter-widgets-disconnected')",
                           arg=box.element_handle(), timeout=PAGE_LOAD_S * MS)
    banner = box.evaluate("el => getComputedStyle(el, '::before').content")
    assert "run this cell again" in banner.lower() and box.evaluate(
        "el => getComputedStyle(el, '::before').display") == "block", f"{name}: no banner, ::before is {banner!r}"
    slider = box.locator(".widget-slider").first
    assert slider.evaluate("el => getComputedStyle(el.parentElement).pointerEvents") == "none" or \
        slider.evaluate("el => getComputedStyle(el).pointerEvents") == "none", f"{name}: its sliders still move"
    icons = box.evaluate("el => [...el.querySelectorAll('.jupyter-widgets-disconnected')]"
                         ".filter(c => !['none', 'normal'].includes(getComputedStyle(c, '::before').content)).length")
    assert icons == 0, f"{name}: {icons} unlabelled disconnected icons"
    return banner


@pytest.mark.browser
@pytest.mark.slow
def test_explorer_at_900_px_redraws_once_keeps_its_settings_and_says_when_its_kernel_is_gone(chromium, lab, tmp_path):
    """Issue 37.4, in JupyterLab at 900 px with the file browser open: the slider label keeps its unit (it
    wraps, nothing is cut); the plot is drawn for the width it is shown at (its image at most as wide as
    the output area, so 8 pt text reads at 8 pt, about 11 px); one slider move changes the plot and the
    readout once each; the saved notebook's static view is the last settings, not the defaults; after a
    kernel restart, and after the kernel process dies, the explorer shows a banner saying to run the
    cell again. Screenshots: explorer_900px.png, explorer_restarted.png, explorer_kernel_died.png."""
    import nbformat
    from playwright.sync_api import sync_playwright

    name = "explorer_lifecycle.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_LIFECYCLE_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / name)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=WINDOW)
            page.set_default_timeout(WIDGET_S * MS)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.goto(f"{lab.url}/lab/workspaces/life-{secrets.token_hex(4)}/tree/{name}?token={lab.token}",
                      timeout=PAGE_LOAD_S * MS)
            page.locator(f'#jp-main-statusbar .jp-StatusBar-TextItem[title="Change kernel for {name}"]',
                         has_text=re.compile(r"\| Idle$")).wait_for(timeout=PAGE_LOAD_S * MS)
            _open_file_browser(page)
            _menu(page, "Run", "runmenu:run-all")
            _wait_for_run_all(page, lab, 1)
            box = page.locator(".course-explorer").first
            image = box.locator("img").first
            area = box.element_handle().evaluate_handle("el => el.closest('.jp-OutputArea-output')")
            # drawn for its width: the probe reported the area's width and the image came back that wide
            page.wait_for_function("([img, area]) => img.complete && img.naturalWidth > 0 && "
                                   "img.naturalWidth <= area.getBoundingClientRect().width + 2",
                                   arg=[image.element_handle(), area], timeout=PAGE_LOAD_S * MS)
            _wait_idle(page, lab)
            shown = image.evaluate("img => [img.naturalWidth, img.getBoundingClientRect().width]")
            scale = shown[1] / shown[0]
            small_px = widgets.DPI * 8 / 72 * scale  # style.FONT_SMALL (8 pt), the smallest plot text
            labels = box.locator(".widget-label").evaluate_all(
                "ls => ls.filter(l => l.textContent.trim()).map(l => [l.textContent, l.scrollWidth <= l.clientWidth + 1 "
                "&& l.scrollHeight <= l.clientHeight + 1, l.getBoundingClientRect().height])")
            box.screenshot(path=str(ARTIFACTS / "explorer_900px.png"))
            print(f"900 px: output area {area.evaluate('a => a.getBoundingClientRect().width'):.0f} px, image {shown}, "
                  f"8 pt text at {small_px:.1f} px; labels {labels}")
            assert [t for t, whole, _ in labels if not whole] == [], f"labels cut: {labels}"
            assert "NVLink GB/s per GPU per direction" in [t for t, _, _ in labels]
            assert small_px >= 10.5, f"8 pt plot text is shown {small_px:.1f} px high (image {shown})"

            # one slider move: one new plot, one new readout
            readout = box.locator(".course-readout")
            page.evaluate(_COUNT_CHANGES_JS, [image.element_handle(), "plot"])
            page.evaluate(_COUNT_CHANGES_JS, [readout.element_handle(), "readout"])
            slider = box.locator(".widget-slider").first
            track = slider.locator(".noUi-target").first.bounding_box()
            handle = slider.locator(".noUi-handle").first.bounding_box()
            hx, hy = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
            page.mouse.move(hx, hy)
            page.mouse.down()
            page.mouse.move(track["x"] + track["width"] * 0.2, hy, steps=8)
            page.mouse.up()
            page.wait_for_function("() => window.courseChanges.plot > 0")
            _wait_idle(page, lab)
            page.wait_for_timeout(1000)
            changes = page.evaluate("() => window.courseChanges")
            print(f"one slider move: {changes}")
            assert changes == {"plot": 1, "readout": 1}, f"one move changed {changes}"

            # saved: the static view is what the learner left it at
            last = readout.text_content().strip()
            _menu(page, "File", "docmanager:save")
            deadline = time.monotonic() + WIDGET_S
            while True:
                try:
                    data = json.loads((lab.root / name).read_text(encoding="utf-8"))["cells"][0]["outputs"][-1]["data"]
                    if "application/vnd.jupyter.widget-view+json" not in data:
                        break
                except (OSError, ValueError, KeyError, IndexError):
                    pass
                assert time.monotonic() < deadline, "not saved with its static view"
                time.sleep(0.5)
            html = "".join(data["text/html"])
            assert last in html and "At these settings:" in html and "NVLink GB/s per GPU per direction" in html, html[-600:]

            # the kernel restarts: the explorer says so
            _menu(page, "Kernel", "kernelmenu:restart")
            page.locator(".jp-Dialog .jp-mod-accept").click()
            banner = _restarted_banner(page, box, "after a restart")
            box.screenshot(path=str(ARTIFACTS / "explorer_restarted.png"))
            # run again: live; then the kernel process dies (the server starts a new one): the same banner
            _menu(page, "Run", "runmenu:run-all")
            live = page.locator(".course-explorer:not(.jupyter-widgets-disconnected)").first
            live.wait_for(timeout=PAGE_LOAD_S * MS)
            _wait_idle(page, lab)
            os.kill(_kernel_pid(lab), signal.SIGKILL)
            _restarted_banner(page, page.locator(".course-explorer").first, "after the kernel died")
            with contextlib.suppress(Exception):  # JupyterLab's own "kernel appears to have died" dialog
                page.locator(".jp-Dialog .jp-mod-accept").click(timeout=10 * MS)
            page.locator(".jp-Dialog").wait_for(state="detached", timeout=WIDGET_S * MS)
            page.locator(".course-explorer").first.screenshot(path=str(ARTIFACTS / "explorer_kernel_died.png"))
            print(f"banner: {banner}")
        finally:
            browser.close()
            lab.shutdown_kernels()
    assert not errors, errors


@pytest.mark.browser
@pytest.mark.slow
def test_a_decks_plot_fits_its_slide(chromium, tmp_path):
    """Issue 37.4: an exported deck's plot (a figure 11 in wide, as the widest chapter figures are) lies
    inside its slide, heading and code above it included. Screenshot: slides_plot.png."""
    import nbformat
    from playwright.sync_api import sync_playwright

    from course_lib import export

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A deck with a plot"),
        nbformat.v4.new_markdown_cell("## 1. The plot"),
        nbformat.v4.new_code_cell("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                                  "from IPython.display import Image, display\nimport io\n"
                                  "fig, ax = plt.subplots(figsize=(11, 6.5))\nax.plot([1, 2, 4, 8], [1, 3, 2, 5])\n"
                                  "buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=100)\n"
                                  "display(Image(buf.getvalue()))")])
    path = tmp_path / "95_plot.ipynb"
    nbformat.write(nb, path)
    deck = export.export_course(tmp_path / "site", notebooks=[path], timeout=60, jobs=1, slides=True)[0]["slides"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.route(re.compile(r"^https?://"), lambda route: route.abort())
            page.goto(deck.as_uri(), timeout=PAGE_LOAD_S * MS)
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=WIDGET_S * MS)
            page.evaluate("() => Reveal.slide(1)")
            page.wait_for_function("() => { const i = Reveal.getCurrentSlide().querySelector('img');"
                                   " return i && i.complete && i.naturalWidth > 0; }", timeout=WIDGET_S * MS)
            page.wait_for_timeout(1500)  # the slide transition
            box = page.evaluate("""() => {
              const slide = Reveal.getCurrentSlide(), img = slide.querySelector('img');
              const r = img.getBoundingClientRect(), s = document.querySelector('.reveal .slides').getBoundingClientRect();
              return {img: [r.left, r.top, r.right, r.bottom], slides: [s.left, s.top, s.right, s.bottom],
                      window: [innerWidth, innerHeight], natural: img.naturalWidth};
            }""")
            page.screenshot(path=str(ARTIFACTS / "slides_plot.png"))
        finally:
            browser.close()
    print(f"deck plot: {box}")
    (left, top, right, bottom), (s_left, s_top, s_right, s_bottom) = box["img"], box["slides"]
    assert box["natural"] >= 1100
    assert left >= s_left - 1 and right <= s_right + 1 and top >= s_top - 1 and bottom <= s_bottom + 1, box
    assert right <= box["window"][0] and bottom <= box["window"][1], box

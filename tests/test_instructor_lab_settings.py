"""The instructor's lab: no news prompt, no *.egg-info in the file browser, Formgrader's maths from the lab."""
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _instructor_command() -> str:
    out = subprocess.run(["make", "-n", "lab-instructor"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_instructor_lab_has_the_learners_news_settings_and_hides_egg_info():
    command = _instructor_command()
    assert f"--LabApp.app_settings_dir={ROOT}/jupyter/instructor-settings" in command
    overrides = json.loads((ROOT / "jupyter/instructor-settings/overrides.json").read_text())
    assert overrides == json.loads((ROOT / "jupyter/learner-settings/overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert not (ROOT / "jupyter/instructor-settings/page_config.json").exists()  # nbgrader stays on
    hidden = re.findall(r"--ContentsManager\.hide_globs=([^' ]+)", command)
    from jupyter_server.services.contents.manager import ContentsManager
    assert set(ContentsManager().hide_globs) | {"*.egg-info"} == set(hidden)  # the defaults, and egg-info


def test_formgrader_pages_load_the_labs_own_mathjax(monkeypatch):
    import nbformat
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    command = _instructor_command()
    folder = re.search(r"JUPYTER_PATH=([^$\s]+)", command).group(1)
    assert folder == str(ROOT / "jupyter/instructor-data")
    monkeypatch.setenv("JUPYTER_PATH", folder)  # as make lab-instructor runs the lab
    config = Config()
    config.HTMLExporter.template_name = "formgrade"  # as nbgrader's FormgradeExtension sets it
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$a^2$")])
    html, _ = HTMLExporter(config=config).from_notebook_node(nb, resources={
        "base_url": "/", "nbgrader": {}, "submission_id": "s", "notebook_id": "n", "index": 0, "total": 1,
        "assignment_id": "a", "notebook_path": "p", "mathjax_url": ""})
    sources = re.findall(r'<script src="([^"]*MathJax[^"]*)"', html, re.IGNORECASE)
    assert sources == ["/static/jupyter_server_mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"], sources
    assert "cdnjs" not in html

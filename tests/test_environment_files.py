"""pyproject.toml and environment.yml must ask for the same runtime packages."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _conda_pip_requirements():
    lines, inside = [], False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("- pip:"):
            inside = True
            continue
        if inside and stripped.startswith("- ") and not stripped.startswith("- -"):
            lines.append(stripped[2:].strip())
    return lines


def test_every_runtime_dependency_is_in_environment_yml_with_the_same_spec():
    conda = {_name(r): r.replace(" ", "") for r in _conda_pip_requirements()}
    for requirement in _pyproject()["dependencies"]:
        name = _name(requirement)
        assert name in conda, f"{name} is in pyproject.toml but not in environment.yml"
        assert conda[name] == requirement.replace(" ", ""), f"{name}: {conda[name]} vs {requirement}"


def test_environment_yml_asks_for_nothing_unknown_to_pyproject():
    project = _pyproject()
    known = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        known |= {_name(r) for r in extra}
    for requirement in _conda_pip_requirements():
        assert _name(requirement) in known, f"environment.yml asks for {requirement}, pyproject.toml does not"


def test_torch_is_pinned_everywhere():
    assert "torch==2.13.0" in _pyproject()["dependencies"]
    assert "torch==2.13.0" in _conda_pip_requirements()


def test_python_version_agrees():
    assert _pyproject()["requires-python"] == ">=3.11"
    assert "python=3.11" in (ROOT / "environment.yml").read_text()


def test_binder_installs_the_course_package():
    post_build = (ROOT / "postBuild").read_text()
    assert "pip install --no-deps -e ." in post_build
    assert not (ROOT / "binder").exists(), "a binder/ folder would make repo2docker ignore the root files"


def _make_dry_run(*args, target=".venv/.installed-stamp", **env):
    """The pip commands `make` would run to build ``target`` from scratch, without running them."""
    return [line for line in _make_commands(*args, target=target, **env) if "pip install" in line]


def _make_commands(*args, target, **env):
    """Every command `make` would run to build ``target`` from scratch, without running them."""
    import os
    import shutil
    import subprocess
    if shutil.which("make") is None:
        import pytest
        pytest.skip("needs make")
    environ = {k: v for k, v in os.environ.items() if k not in {"TORCH_INDEX", "TORCH", "MAKEFLAGS", "CI"}}
    environ.update(env)
    out = subprocess.run(["make", "-n", "-B", "--no-print-directory", *args, target],
                         cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60, check=True).stdout
    return out.splitlines()


def test_make_installs_the_pinned_torch_on_its_own_before_the_package():
    pins = re.findall(r"^TORCH\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert pins == [next(r for r in _pyproject()["dependencies"] if _name(r) == "torch")]
    installs = _make_dry_run()
    torch_step = next(i for i, line in enumerate(installs) if "'torch==2.13.0'" in line)
    package_step = next(i for i, line in enumerate(installs) if "-e '.[dev,instructor]'" in line)
    assert torch_step < package_step


def test_linux_gets_the_cpu_build_by_default_and_the_index_can_be_overridden():
    import platform
    torch_line = next(line for line in _make_dry_run() if "'torch==" in line)
    if platform.system() == "Linux":
        assert "--index-url https://download.pytorch.org/whl/cpu " in torch_line
    else:
        assert "--index-url" not in torch_line
    cuda = next(line for line in _make_dry_run("TORCH_INDEX=https://download.pytorch.org/whl/cu128")
                if "'torch==" in line)
    assert "--index-url https://download.pytorch.org/whl/cu128 " in cuda
    assert "--index-url" not in next(line for line in _make_dry_run(TORCH_INDEX="") if "'torch==" in line)


def test_ci_uses_pips_configured_index_unless_told():
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'export TORCH_INDEX="${TORCH_INDEX-}"' in ci
    assert ci.index("export TORCH_INDEX") < ci.index("\nmake test")


def test_make_test_installs_chromium_only_in_ci_or_when_asked():
    def installs_chromium(commands):
        return any("ensure_chromium" in line for line in commands)
    assert not installs_chromium(_make_commands(target="test"))
    assert installs_chromium(_make_commands(target="test", CI="true"))
    assert installs_chromium(_make_commands(target="browser-deps"))
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'export CI="${CI:-true}"' in ci and "export COURSE_REQUIRE_BROWSER=1" in ci
    assert ci.index('export CI=') < ci.index("\nmake test")

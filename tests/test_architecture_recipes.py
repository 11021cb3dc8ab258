"""docs/ARCHITECTURE.md's recipes, each followed as a real edit.

Each test copies the repository (every file git tracks, tests included) into a temporary folder, edits the
real files there exactly as the recipe says (no loader is patched), runs the commands the recipe names with
this interpreter (the copy first on the path) and checks what the recipe promises. Then it runs, in the
copy, every test file the edit reaches: each test file that imports a module the recipe changed or whose
data file it edited (``_reached``), fast tests only. A step the recipe leaves out, or a test elsewhere that
pins today's catalog, makes its test fail, so neither the page nor the suite goes stale silently.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import manifest

ROOT = manifest.ROOT
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")

# Where the recipes' files and modules live: each path appears here once (explorers/ may become chapters/).
HARDWARE, SOURCES = "course_lib/data/hardware.json", "course_lib/data/sources.json"
NVSWITCH_DATA, EFFICIENCY = "course_lib/data/nvswitch.json", "course_lib/data/efficiency.json"
COLLECTIVES, STYLE = "course_lib/collectives.py", "course_lib/style.py"
CHAPTER_04 = "course_lib/chapters/collectives/patterns.py"          # chapter 04's own ALGORITHMS tuple
PLANNER, LAYOUTS = "course_lib.chapters.planner", "course_lib.chapters.model_parallel"
NVSWITCH_CHAPTER, CHAPTER_04_MODULE = "course_lib.chapters.nvswitch", "course_lib.chapters.collectives"
GOLDEN = "tests/golden"
ANSWER_KEY, EXERCISES = "solutions/answers.json", "course_lib/exercises"
# The module that reads each data file a recipe edits: a test file importing it is reached by the edit.
READERS = {HARDWARE: "course_lib.hardware", SOURCES: "course_lib.datafiles", NVSWITCH_DATA: NVSWITCH_CHAPTER,
           EFFICIENCY: "course_lib.costmodel.efficiencies", "course.toml": "course_lib.manifest", EXERCISES: "course_lib.checks",
           ANSWER_KEY: "course_lib.grading", COLLECTIVES: "course_lib.collectives", STYLE: "course_lib.style",
           CHAPTER_04: CHAPTER_04_MODULE}
FAST = "not slow and not browser"  # the slow end-to-end tests run the built notebooks, not the edited library


def _recipe(title: str) -> str:
    """The text of one recipe section of ARCHITECTURE.md."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#{{2,3}} |\Z)", DOC, re.MULTILINE | re.DOTALL)
    assert match, f"ARCHITECTURE.md has no recipe {title!r}"
    return match.group(1)


def _tracked() -> list[str]:
    """The repository's files as a fresh clone has them: tracked, or new and not ignored."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return sorted(rel for rel in out.split("\0") if rel and (ROOT / rel).is_file())


def _copy(tmp_path: Path) -> Path:
    """A copy of the repository (``_tracked``: no virtual environment, caches or outputs) under ``tmp_path/repo``."""
    repo = tmp_path / "repo"
    for rel in _tracked():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    return repo


def _reached(repo: Path, *edited: str) -> list[str]:
    """The copy's test files that import a module ``edited`` names (a course_lib module, or a data file, by
    the module in ``READERS`` that reads it), or a module inside it; the layering test's reader of imports."""
    from .test_layering import imports
    modules = [READERS.get(e, e) for e in edited]
    found = []
    for path in sorted((repo / "tests").glob("test_*.py")):
        if path.name == Path(__file__).name:  # this file: the recipes themselves
            continue
        names = {name for name, _, _ in imports(path, repo / "course_lib")}
        if any(n == m or n.startswith(m + ".") for n in names for m in modules):
            found.append(str(path.relative_to(repo)))
    return found


def _pytest(repo: Path, *args: str) -> str:
    """pytest in the copy, without the plugins the repository's addopts name (nbval: no notebook runs here)."""
    return _run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args)


def _run_reached(repo: Path, *edited: str) -> str:
    """Run, in the copy, the fast tests of every test file the edit reaches; all must pass (none fail or error)."""
    files = _reached(repo, *edited)
    assert files, f"no test file imports any of {edited}"
    out = _run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-m", FAST, *files, timeout=900)
    assert re.search(r"\b\d+ passed\b", out) and not re.search(r"\b\d+ (failed|errors?)\b", out), out[-3000:]
    return out


def _run(repo: Path, *argv: str, status: int = 0, timeout: int = 300) -> str:
    """Run ``python *argv`` in the copy (its course_lib first on the path); stdout + stderr."""
    env = dict(os.environ, PYTHONPATH=str(repo), MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # a pytest run needs none of the plugins (4 s of start-up)
    env.pop("COURSE_LIB_ANSWER_KEY", None)
    proc = subprocess.run([sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == status, f"python {' '.join(argv)}: exit {proc.returncode}, wanted {status}\n{out[-3000:]}"
    return out


def _edit(repo: Path, rel: str, old: str, new: str) -> None:
    """One textual edit of a real file of the copy: ``old`` occurs exactly once and becomes ``new``."""
    path = repo / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{rel}: {old!r} occurs {text.count(old)} times"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _append_to_list(repo: Path, rel: str, key: str, row: dict) -> None:
    """Add ``row`` as the last element of the top-level list ``key`` of a JSON data file, one line, as its rows are."""
    path = repo / rel
    text = path.read_text(encoding="utf-8")
    start = text.index(f'"{key}": [')
    end = start + text[start:].index("\n  ]")
    path.write_text(text[:end] + ",\n    " + json.dumps(row) + text[end:], encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))[key][-1] == row


def _add_to_object(repo: Path, rel: str, key: str, entries: dict) -> None:
    """Add ``entries`` to the JSON object at ``key`` (a path of keys) of a data file."""
    path = repo / rel
    data = json.loads(path.read_text(encoding="utf-8"))
    target = data
    for part in key.split("/") if key else ():
        target = target[part]
    target.update(entries)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _new_source(repo: Path, source_id: str, title: str) -> None:
    _add_to_object(repo, SOURCES, "", {source_id: {"title": title, "url": f"https://example.org/{source_id}",
                                                   "publisher": "our lab", "year": 2026}})


def test_the_layer_table_matches_the_layering_test():
    from .test_layering import LAYERS
    rows = dict(re.findall(r"^\| (\d) \| (.+?) \|", DOC, re.MULTILINE))
    for module, layer in LAYERS.items():
        if module != "course_lib":
            assert f"`{module}`" in rows[str(layer)], f"ARCHITECTURE.md: {module} missing from layer {layer}"



def test_the_sub_layer_table_matches_the_layering_test():
    from .test_layering import SUBLAYERS
    rows = dict(re.findall(r"^\| (5[a-z]) [^|]*\| (.+?) \|", DOC, re.MULTILINE))
    assert list(rows) == [sid for sid, _, _ in SUBLAYERS], "ARCHITECTURE.md: the sub-layers, lowest first"
    for sid, _, patterns in SUBLAYERS:
        for pattern in patterns:
            shown = pattern.replace("[0-9][0-9]", "NN")
            assert f"`{shown}`" in rows[sid], f"ARCHITECTURE.md: {shown} missing from sub-layer {sid}"


# ---------------------------------------------------------------- recipe: a catalog system

@pytest.mark.slow  # a copy of the repository, the recipe's commands, then the tests it reaches
@pytest.mark.timeout(1800)
def test_recipe_add_a_catalog_system(tmp_path):
    recipe = _recipe("Add a catalog system")
    for named in ("data/hardware.json", "data/sources.json", "tests/golden/record.py", "planner_explorer",
                  "layout_explorer"):
        assert named in recipe, f"the recipe does not name {named}"
    repo = _copy(tmp_path)
    assert _run(repo, "-c", "import course_lib; print(course_lib.__file__)").startswith(str(repo))
    before = {p.name: p.read_text(encoding="utf-8") for p in (repo / GOLDEN).glob("*.txt")}
    # 1-2. one object in "systems", the closest system copied with what differs changed, citing a new source
    base = next(r for r in json.loads((repo / HARDWARE).read_text(encoding="utf-8"))["systems"] if r["id"] == "dgx-h100")
    _append_to_list(repo, HARDWARE, "systems", dict(base, id="lab-h100-4nic", name="Our lab's DGX H100, 4 NICs",
                                                    nics_per_node=4, source="our-lab-cabling"))
    _new_source(repo, "our-lab-cabling", "Our lab's cabling sheet: 4 of the DGX H100's 8 NIC ports cabled")
    # 3. the goldens list and price every catalog system: re-recorded, catalog.txt and predict.txt gain lines
    _run(repo, f"{GOLDEN}/record.py")
    after = {p.name: p.read_text(encoding="utf-8") for p in (repo / GOLDEN).glob("*.txt")}
    assert after.keys() == before.keys()
    assert [name for name in sorted(before) if after[name] != before[name]] == ["catalog.txt", "predict.txt"]
    for name in before:  # lines are added, none removed or changed
        diff = list(difflib.ndiff(before[name].splitlines(), after[name].splitlines()))
        assert not [line for line in diff if line.startswith("- ")], f"{name}: a recorded line changed"
    added = [line[2:] for line in difflib.ndiff(before["catalog.txt"].splitlines(), after["catalog.txt"].splitlines())
             if line.startswith("+ ")]
    assert any(line.startswith("lab-h100-4nic ") and "4 x InfiniBand NDR" in line for line in added)  # `systems`
    assert '"name": "Our lab\'s DGX H100, 4 NICs",' in "\n".join(added)                         # `systems --json`
    # 4. nothing else: predict prices it like the same box told --nics 4 ...
    case = "$ python -m course_lib predict all_reduce --system lab-h100-4nic --nodes 2 -b 32K -e 16G -f 4\n"
    ours = after["predict.txt"].split(case)[1].split("[exit 0]")[0]
    same = _run(repo, "-m", "course_lib", "predict", "all_reduce", "--system", "dgx-h100", "--nics", "4",
                "--nodes", "2", "-b", "32K", "-e", "16G", "-f", "4")
    rows = lambda text: [line for line in text.splitlines() if line.strip() and not line.startswith("#")]  # noqa: E731
    assert rows(ours) == rows(same) and len(rows(ours)) == 10  # 32K to 16G, factor 4
    # ... and the planner and layout explorers take its id (their dropdowns add it)
    shown = _run(repo, "-c", f"from {PLANNER} import planner_explorer\nfrom {LAYOUTS} import layout_explorer\n"
                             "for make in (planner_explorer, layout_explorer):\n"
                             "    print('shows', make(system='lab-h100-4nic').values()['system'])")
    assert re.findall(r"^shows (\S+)$", shown, re.MULTILINE) == ["lab-h100-4nic", "lab-h100-4nic"]
    # and every test file the edit reaches (those that import the catalog's reader) passes with the new row
    _run_reached(repo, HARDWARE)


# ---------------------------------------------------------------- recipe: a collective or an algorithm

@pytest.mark.slow  # a copy of the repository, the recipe's commands, then the tests it reaches
@pytest.mark.timeout(1800)
def test_recipe_add_an_algorithm(tmp_path):
    recipe = _recipe("Add a collective or an algorithm")
    for named in ("collectives.py", "ALGORITHM_COLOURS", "style.py", CHAPTER_04, "tests/test_style.py",
                  "tests/golden/record.py"):
        assert named in recipe, f"the recipe does not name {named}"
    repo = _copy(tmp_path)
    before = {p.name: p.read_text(encoding="utf-8") for p in (repo / GOLDEN).glob("*.txt")}
    # 1-2. one Algorithm with its alpha-beta terms, added to all_reduce's entry: one-shot, every rank sends its whole
    #      buffer to every other and reduces what it receives (one step, p - 1 buffers out of each port)
    _edit(repo, COLLECTIVES, "\nregister(Collective(\"all_reduce\"",
          '\nONE_SHOT = Algorithm("one_shot", "one-shot (every rank sends its buffer to every other)",\n'
          '                     lambda p: 1, lambda p: p - 1, "each rank reduces the p-1 buffers it receives")\n'
          '\nregister(Collective("all_reduce"')
    _edit(repo, COLLECTIVES, "HALVING_DOUBLING, NAIVE,\n                           IN_NETWORK)",
          "HALVING_DOUBLING, NAIVE,\n                           IN_NETWORK, ONE_SHOT)")
    # 3. its colour
    _edit(repo, STYLE, 'ALGORITHM_COLOURS = {\n', 'ALGORITHM_COLOURS = {\n    "one_shot": "#aec7e8",\n')
    # 4. chapter 04 teaches it: its own tuple
    _edit(repo, CHAPTER_04, '"double_binary_tree")\n', '"double_binary_tree", "one_shot")\n')
    # 5. the style test passes, and the goldens: predict's own choice is NCCL's, and at the cost explorer's
    #    1 GB the one-shot sends p - 1 buffers where halving-doubling sends 2(p-1)/p: no golden moves
    _pytest(repo, "tests/test_style.py")
    _run(repo, f"{GOLDEN}/record.py")
    changed = [name for name in before if (repo / GOLDEN / name).read_text(encoding="utf-8") != before[name]]
    assert changed == []
    # nothing else: predict offers and prices it under the registry's label; chapter 04's table lists it
    out = _run(repo, "-m", "course_lib", "predict", "all_reduce", "--system", "dgx-h100", "--algo",
               "one_shot", "-b", "1G", "-e", "1G")
    assert "one-shot (every rank sends its buffer to every other)" in out or "one_shot" in out
    table = _run(repo, "-c", f"from {CHAPTER_04_MODULE} import algorithm_table\n"
                             "rows = {r['algorithm']: r for r in algorithm_table(1e9, 8, 100e9, 5e-6)}\n"
                             "print(rows['one_shot']['label'], rows['one_shot']['time_s'])")
    label, seconds = table.rsplit(" ", 1)
    assert label == "one-shot (every rank sends its buffer to every other)" and \
        float(seconds) == 1 * 5e-6 + 7 * 1e9 / 100e9
    # and every test file the edit reaches: the registry's, the palette's and chapter 04's importers
    _run_reached(repo, COLLECTIVES, STYLE, CHAPTER_04)


# ---------------------------------------------------------------- recipe: a chapter

@pytest.mark.slow  # a copy of the repository, the recipe's commands, then the tests it reaches
@pytest.mark.timeout(1800)
def test_recipe_add_a_chapter(tmp_path):
    recipe = _recipe("Add a chapter")
    for named in ("course.toml", "solutions/src", "course_lib/exercises", "solutions/feedback.json", "exercise=\"",
                  ANSWER_KEY, "grading seal", "authoring build",
                  "README", "tests/test_contract.py", "tests/test_readme.py", "glossary", "`skill`", "`demand`",
                  "exercise_audit.md", "**Exercise <id>**", "authoring check", "course_lib/conventions.py"):
        assert named in recipe, f"the recipe does not name {named}"
    repo = _copy(tmp_path)
    # 1. one [[chapter]] entry
    with open(repo / "course.toml", "a", encoding="utf-8") as toml:
        toml.write('\n[[chapter]]\nnumber = "99"\nslug = "demo"\ntitle = "A demo chapter"\nminutes = 20\n'
                   f'exercises = "{EXERCISES}/99.json"\n')
    # 2. its source, opening with its heading, time and the glossary link, with one graded exercise: a directive
    #    cell over the solution (the build writes the cell pair) under a prompt that opens with its name
    (repo / "solutions/src/99_demo.py").write_text(
        "# %% [markdown]\n# # 99 · A demo chapter\n#\n# **Time:** about 20 minutes. Terms are in the "
        "[glossary](../docs/glossary.md).\n\n# %%\nfrom course_lib import checks\n\n"
        "# %% [markdown]\n# **Exercise 99.1** (1 point). *Predict.* A vendor quotes an H100's NVLink as 900 GB/s. "
        "What does one direction carry, in GB/s? Store it in `nvlink4_gb_s`.\n\n"
        '# %% exercise="99.1"\nnvlink4_gb_s = 900 / 2\n', encoding="utf-8")
    # 3. its exercises file, without keys, with skill and demand; its hints in solutions/feedback.json (never in
    #    the learner's package); its row in the audit table
    (repo / EXERCISES / "99.json").write_text(json.dumps({"99.1": {
        "variable": "nvlink4_gb_s", "kind": "number", "points": 1, "rtol": 0.001, "unit": "GB/s per direction",
        "skill": "predict", "demand": "plug-in"}},
        indent=1) + "\n", encoding="utf-8")
    _add_to_object(repo, "solutions/feedback.json", "", {"99.1": {
        "concept": "a vendor's NVLink total counts both directions", "formula": "per direction = the vendor's total / 2"}})
    with open(repo / "docs/exercise_audit.md", "a", encoding="utf-8") as audit:
        audit.write("| 99 | 99.1 | plug-in | plug-in | new: the demo chapter's one item |\n")
    judge = ("from course_lib import checks, grading, instructor\nprint('self-check', checks.evaluate('99.1', 450.0).status)\n"
             "try:\n    print('grading', grading.evaluate('99.1', 450.0).status)\n"
             "except ValueError as exc:\n    print('grading refuses:', exc)\n")
    unsealed = _run(repo, "-c", judge)
    assert "self-check recorded" in unsealed and "grading refuses: exercise_id '99.1' has no entry in the answer key" in unsealed
    # 4. the answer key, 5. the seal
    _add_to_object(repo, ANSWER_KEY, "", {"99.1": 450.0})
    assert _run(repo, "-m", "course_lib.grading", "seal").split() == ["sealed", "99.1"]
    assert "key" in json.loads((repo / EXERCISES / "99.json").read_text(encoding="utf-8"))["99.1"]
    assert _run(repo, "-c", judge + "print('99_demo' in instructor.chapters())").splitlines() == \
        ["self-check correct", "grading correct", "True"]  # and the instructor's tooling lists the chapter
    # 6. the notebooks: build writes the new chapter's two
    built = _run(repo, "-m", "course_lib.authoring", "build")
    assert "99_demo.ipynb" in built and "01_pcie" not in built
    student = (repo / "notebooks/99_demo.ipynb").read_text(encoding="utf-8")
    assert "nvlink4_gb_s = None" in student and "ex99-1-check" in student and 'checks.check(\\"99.1\\"' in student
    # 7. the README's syllabus row; the contract and README tests pass for it
    readme = (repo / "README.md").read_text(encoding="utf-8")
    last = [line for line in readme.splitlines() if re.match(r"^\| \d\d \| \[", line)][-1]
    _edit(repo, "README.md", last + "\n", last + "\n| 99 | [a demo chapter](notebooks/99_demo.ipynb) | NVLink per direction |\n")
    passed = _pytest(repo, "tests/test_contract.py", "tests/test_readme.py", "-k",
                     "99_demo or syllabus or manifest_lists_every_chapter_source")
    assert re.search(r"\b4 passed\b", passed)
    # 8. authoring check: built, and every convention kept
    assert _run(repo, "-m", "course_lib.authoring", "check") == ""
    # 9. and every test file the edit reaches: those reading the manifest (every chapter) or the glossary
    _run_reached(repo, "course.toml", "course_lib.glossary")


# ---------------------------------------------------------------- recipe: a GPU generation

@pytest.mark.slow  # a copy of the repository, the recipe's commands, then the tests it reaches
@pytest.mark.timeout(1800)
def test_recipe_add_a_gpu_generation(tmp_path):
    recipe = _recipe("Add a GPU generation")
    for named in ('"nvlink"', '"gpus"', "nccl_arch", "data/efficiency.json", "ll_max_bw_gb_s", "by_nvlink_generation",
                  '"nvswitch"', "layout", "data/nvswitch.json", "Add a catalog system"):
        assert named in recipe, f"the recipe does not name {named}"
    repo = _copy(tmp_path)
    # 1. NVLink 6: 3.6 TB/s per GPU as NVIDIA's NVLink page quotes it (36 x 50 GB/s per direction: the split assumed)
    _append_to_list(repo, HARDWARE, "nvlink", {"generation": 6, "gpu": "Rubin", "links_per_gpu": 36,
                                               "link_gb_s_per_direction": 50, "year": 2026, "source": "nvidia-nvlink"})
    # 2. the GPU, with its NCCL generation (a new one: "rubin")
    _append_to_list(repo, HARDWARE, "gpus", {"id": "rubin-example", "name": "Example NVLink-6 GPU", "memory_gb": 288,
                                             "bf16_dense_tflops": 2500, "fp8_dense_tflops": 5000,
                                             "mxfp8_dense_tflops": 5000, "hbm_tb_s": 13.0,
                                             "fp8_note": "example figures for the recipe, not a real GPU's",
                                             "nvlink_generation": 6, "nccl_arch": "rubin",
                                             "pcie_generation": 6, "source": "nvidia-nvlink"})
    # 5. its NVSwitch generation, naming a layout, and 6. a system that uses it (the catalog-system recipe)
    _append_to_list(repo, HARDWARE, "nvswitch", {"generation": 5, "nvlink_generation": 6, "ports": 72,
                                                 "layout": "rubin-example-8", "system": "an 8-GPU board", "chips_in_system": 4,
                                                 "gpus_in_domain": 8, "in_network_reduction": True, "year": 2026,
                                                 "source": "nvidia-nvlink"})
    base = next(r for r in json.loads((repo / HARDWARE).read_text(encoding="utf-8"))["systems"] if r["id"] == "dgx-b200")
    _append_to_list(repo, HARDWARE, "systems", dict(base, id="rubin-example-8gpu", name="8 example NVLink-6 GPUs",
                                                    gpu="rubin-example", nvlink_generation=6, nvlink_links_per_gpu=36,
                                                    nvswitch_generation=5, pcie_generation=6))
    predict = ("-m", "course_lib", "predict", "all_reduce", "--system", "rubin-example-8gpu", "-b", "1G", "-e", "1G")
    generations = ("-c", f"from {NVSWITCH_CHAPTER} import generations\nrow = generations()[-1]\n"
                         "print(row['generation'], row['chips_in_system'], row['links_per_gpu_per_chip'])")
    # what the data does not know yet is refused in one line naming it and the known ones
    refused = lambda argv: [line for line in _run(repo, *argv, status=2 if argv[0] == "-m" else 1).splitlines()
                            if line.strip()][-1]  # noqa: E731
    assert refused(predict) == ("error: nvlink_generation '6' has no row in efficiency.json "
                                "technologies.nvls.by_nvlink_generation (NVLS efficiency per NVLink generation); "
                                "known generations: 4, 5")
    # 4. the NVLink generation's NVLS efficiency (its switch reduces in the network), with its derivation
    _add_to_object(repo, EFFICIENCY, "technologies/nvls/by_nvlink_generation",
                   {"6": {"efficiency": 0.54, "source": "nccl-2140",
                          "derivation": "assumed: NVLink 5's measured NVLS efficiency until a run on NVLink 6 is published"}})
    assert refused(predict) == ("error: gpu rubin-example has NCCL generation 'rubin', which has no row in "
                                "efficiency.json nccl_protocols; known generations: volta, ampere, hopper, blackwell, "
                                "cdna3, cdna4")
    # 3. the new nccl_arch's rows in efficiency.json
    _add_to_object(repo, EFFICIENCY, "nccl_protocols/ll_max_bw_gb_s/one_node", {"rubin": 282.0})
    _add_to_object(repo, EFFICIENCY, "nccl_protocols/ll128_max_bw_per_channel_gb_s", {"rubin": 40.0})
    priced = _run(repo, *predict)
    assert "rubin-example-8gpu" in priced and re.search(r"^\s+1073741824\s", priced, re.MULTILINE)
    # 5. chapter 03's generation table: refused in one line until the layout the row names exists
    assert refused(generations) == ("ValueError: NVSwitch generation 5 (data/hardware.json) has layout "
                                    "'rubin-example-8', not a layout of data/nvswitch.json; known layouts: dgx-2, "
                                    "dgx-a100, dgx-h100, dgx-b200, gb200-nvl72")
    _edit(repo, NVSWITCH_DATA, '"derived": true}\n  },\n  "switch_system"',
          '"derived": true},\n    "rubin-example-8": ' + json.dumps(
              {"name": "8 example NVLink-6 GPUs", "nvswitch_generation": 5, "gpus": 8, "chips": 4, "links_per_gpu": 36,
               "links_per_gpu_per_chip": [9, 9, 9, 9], "chips_reached_per_gpu": 4, "gpu_ports_per_chip": 72,
               "trunk_ports_per_chip": 0, "external_ports_per_chip": 0, "source": "nvidia-nvlink", "derived": True})
          + '\n  },\n  "switch_system"')
    assert _run(repo, *generations).splitlines()[-1] == "5 4 9 to each of 4 chips"
    # 6. the system that uses it is a catalog system: the goldens gain its lines
    _run(repo, f"{GOLDEN}/record.py")
    _run(repo, f"{GOLDEN}/record.py", "--check")
    # and every test file the edit reaches: the catalog's, the cost model's and chapter 03's importers
    _run_reached(repo, HARDWARE, EFFICIENCY, NVSWITCH_DATA)

"""docs/ARCHITECTURE.md's three recipes, each followed step by step in a temporary copy (or with the
registry's own ``register``), checking that the result shows up where the recipe says it does."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from course_lib import authoring, collectives, costmodel, datafiles, hardware, instructor, manifest
from course_lib.__main__ import main

ROOT = manifest.ROOT
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _run(*argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def _recipe(title: str) -> str:
    """The text of one recipe section of ARCHITECTURE.md."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#{{2,3}} |\Z)", DOC, re.MULTILINE | re.DOTALL)
    assert match, f"ARCHITECTURE.md has no recipe {title!r}"
    return match.group(1)


def test_the_layer_table_matches_the_layering_test():
    from .test_layering import LAYERS
    rows = dict(re.findall(r"^\| (\d) \| (.+?) \|", DOC, re.MULTILINE))
    for module, layer in LAYERS.items():
        if module != "course_lib":
            assert f"`{module}`" in rows[str(layer)], f"ARCHITECTURE.md: {module} missing from layer {layer}"


# ---------------------------------------------------------------- recipe 1: a catalog system

def test_recipe_add_a_catalog_system(tmp_path, monkeypatch):
    recipe = _recipe("Add a catalog system")
    assert "data/hardware.json" in recipe and "data/sources.json" in recipe
    # 1. one entry in data/hardware.json's "systems" (here: a DGX H100 cabled with 4 NICs instead of 8),
    #    citing a source id of data/sources.json
    catalog = copy.deepcopy(hardware.catalog())
    base = next(row for row in catalog["systems"] if row["id"] == "dgx-h100")
    catalog["systems"].append(dict(base, id="lab-h100-4nic", name="Our lab's DGX H100, 4 NICs cabled",
                                   nics_per_node=4, source="dgx-h100-guide"))
    copied = tmp_path / "hardware.json"
    copied.write_text(json.dumps(catalog), encoding="utf-8")
    real_load = datafiles.load
    monkeypatch.setattr(datafiles, "load", lambda name: json.loads(copied.read_text(encoding="utf-8"))
                        if name == "hardware.json" else real_load(name))
    hardware.catalog.cache_clear()
    try:
        # 2. it shows up: the catalog, `systems`, and `predict --system`, priced like the same hardware
        assert "lab-h100-4nic" in hardware.system_ids()
        assert "lab-h100-4nic" in _run("systems")
        assert datafiles.source(hardware.system("lab-h100-4nic").source)["url"].startswith("https://")
        ours = _run("predict", "all_reduce", "--system", "lab-h100-4nic", "--nodes", "2", "-b", "1G", "-e", "1G")
        same = _run("predict", "all_reduce", "--system", "dgx-h100", "--nics", "4", "--nodes", "2",
                    "-b", "1G", "-e", "1G")
        eight = _run("predict", "all_reduce", "--system", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G")
        rows = lambda text: [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        assert rows(ours) == rows(same) and rows(ours) != rows(eight)
    finally:
        monkeypatch.undo()
        hardware.catalog.cache_clear()
    assert "lab-h100-4nic" not in hardware.system_ids()


# ---------------------------------------------------------------- recipe 2: a collective or an algorithm

def test_recipe_add_an_algorithm_to_the_registry():
    recipe = _recipe("Add a collective or an algorithm")
    assert "collectives.py" in recipe and "register" in recipe
    # 1. one Algorithm with its alpha-beta terms: two rings in opposite directions, each carrying half
    #    of the buffer, so each direction of a port moves (p-1)/p of it
    bidir = collectives.Algorithm("bidirectional_ring", "two rings, opposite directions",
                                  steps=lambda p: 2 * (p - 1), volume=lambda p: (p - 1) / p,
                                  note="each ring carries half the buffer; both directions of every link busy")
    old = collectives.get("all_reduce")
    # 2. register it with the collective (or add it to the entry in collectives.py)
    collectives.register(replace(old, algorithms={**old.algorithms, bidir.id: bidir}))
    try:
        # 3. the registry-driven cost model prices it, the CLI offers it, its label is the registry's
        assert "bidirectional_ring" in costmodel.predict_algorithms()
        t = costmodel.collective_time("all_reduce", 1e9, 8, 100e9, 5e-6, "bidirectional_ring")
        assert t == pytest.approx(14 * 5e-6 + 7 / 8 * 1e9 / 100e9)
        assert t < costmodel.collective_time("all_reduce", 1e9, 8, 100e9, 5e-6, "ring")
        assert collectives.label("all_reduce", "bidirectional_ring") == "two rings, opposite directions"
        pred = costmodel.predict("all_reduce", 2**30, "dgx-h100", algorithm="bidirectional_ring")
        ring = costmodel.predict("all_reduce", 2**30, "dgx-h100", algorithm="ring")
        assert float(pred.busbw[0]) > 0 and pred.algorithm == "bidirectional_ring"
        assert float(pred.time_s[0]) != float(ring.time_s[0])
        out = _run("predict", "all_reduce", "--system", "dgx-h100", "--algo", "bidirectional_ring",
                   "-b", "1G", "-e", "1G")
        assert "bidirectional_ring" in out or "two rings" in out
    finally:
        collectives.register(old)
    assert "bidirectional_ring" not in costmodel.predict_algorithms()


# ---------------------------------------------------------------- recipe 3: a chapter

def test_recipe_add_a_chapter(tmp_path, monkeypatch):
    recipe = _recipe("Add a chapter")
    assert "course.toml" in recipe and "authoring build" in recipe
    # a temporary copy of what authoring reads: the manifest and the chapter sources
    shutil.copy(ROOT / "course.toml", tmp_path / "course.toml")
    shutil.copytree(ROOT / "solutions" / "src", tmp_path / "solutions" / "src")
    exercises = tmp_path / "course_lib" / "exercises"   # the build reads each exercise's variable and points
    shutil.copytree(ROOT / "course_lib" / "exercises", exercises, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    # 1. one [[chapter]] entry
    with open(tmp_path / "course.toml", "a", encoding="utf-8") as toml:
        toml.write('\n[[chapter]]\nnumber = "99"\nslug = "demo"\ntitle = "A demo chapter"\nminutes = 20\n'
                   'exercises = "course_lib/exercises/99.json"\n')
    # 2. its source, with one graded exercise, and 3. its exercises file
    (tmp_path / "solutions" / "src" / "99_demo.py").write_text(
        "# %% [markdown]\n# # 99 · A demo chapter\n#\n# **Time:** about 20 minutes.\n\n"
        '# %% nbgrader={"grade": false, "grade_id": "ex99-1-answer", "locked": false, "schema_version": 3, '
        '"solution": true}\n### BEGIN SOLUTION\nnvlink4_gb_s = 900 / 2\n### END SOLUTION\n', encoding="utf-8")
    (exercises / "99.json").write_text(json.dumps({"99.1": {"variable": "nvlink4_gb_s", "kind": "number",
                                                            "expected": 450.0, "points": 1}}), encoding="utf-8")
    toml = tmp_path / "course.toml"
    new = manifest.chapter("99", toml)
    assert new.stem == "99_demo" and new.exercises_path.is_file() and len(manifest.chapters(toml)) == len(manifest.chapters()) + 1
    # 4. authoring build writes both notebooks (and stale() wanted them)
    assert new.student_notebook in authoring.stale(toml)
    written = authoring.build(toml)
    assert {new.solution_notebook, new.student_notebook} <= set(written)
    student = json.loads(new.student_notebook.read_text(encoding="utf-8"))
    code = "".join("".join(c["source"]) for c in student["cells"] if c["cell_type"] == "code")
    assert "nvlink4_gb_s = None" in code and "900 / 2" not in code
    assert authoring.stale(toml) == []
    # ... and the instructor tooling and the other readers of the manifest list it
    monkeypatch.setattr(manifest, "MANIFEST", toml)
    manifest._default.cache_clear()
    try:
        assert "99_demo" in instructor.chapters()
    finally:
        monkeypatch.undo()
        manifest._default.cache_clear()
    # a source the manifest does not list is reported, not silently skipped
    (tmp_path / "solutions" / "src" / "98_forgotten.py").write_text("# %% [markdown]\n# # 98\n", encoding="utf-8")
    assert tmp_path / "solutions" / "src" / "98_forgotten.py" in authoring.stale(toml)
    assert Path(ROOT / "notebooks" / "99_demo.ipynb").exists() is False

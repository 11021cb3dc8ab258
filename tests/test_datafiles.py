import json
import pathlib
import re

import pytest

from course_lib import datafiles

DATA = pathlib.Path(datafiles.__file__).parent / "data"
EXERCISES = pathlib.Path(datafiles.__file__).parent / "exercises"   # each chapter's exercises file


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_every_data_file_loads_as_a_json_object(path):
    assert isinstance(datafiles.load(path.name), dict)


def test_a_missing_data_file_names_itself():
    with pytest.raises(FileNotFoundError, match="no_such_file.json"):
        datafiles.load("no_such_file.json")


# ---------------------------------------------------------------- the bibliography (data/sources.json)

ROOT = DATA.parents[1]
SOURCE_CALL = re.compile(r"""\bsource\(\s*["']([^"']+)["']""")


def _code_citations() -> set[tuple[str, str]]:
    """(file, id) for every ``source("<id>")`` written in the library, the chapter sources and the tests."""
    found = set()
    for folder in ("course_lib", "solutions/src", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for sid in SOURCE_CALL.findall(path.read_text(encoding="utf-8")):
                found.add((str(path.relative_to(ROOT)), sid))
    return found


def test_every_source_has_the_shared_schema():
    bib = datafiles.bibliography()
    assert len(bib) >= 100
    for sid, row in bib.items():
        assert set(row) <= {"title", "url", "publisher", "year", "note"}, sid
        assert row["title"] and row["publisher"], sid
        # a published source has its address; a measurement the course made itself names the script that made it
        assert row["url"].startswith("https://") or (ROOT / row["url"]).is_file() and "course" in row["publisher"], sid
        assert row["year"] is None or (isinstance(row["year"], int) and 1990 <= row["year"] <= 2030), sid
        assert isinstance(row.get("note", ""), str), sid


def test_one_source_has_one_id():
    ids_by_url = {}
    for sid, row in datafiles.bibliography().items():
        ids_by_url.setdefault(row["url"], []).append(sid)
    assert not {url: ids for url, ids in ids_by_url.items() if len(ids) > 1}, "cite the existing id instead"


def test_no_data_file_keeps_its_own_sources_map():
    for path in sorted(DATA.rglob("*.json")) + sorted(EXERCISES.glob("*.json")):
        if path.name != "sources.json" and path.parent.name != "samples":
            assert "sources" not in json.loads(path.read_text(encoding="utf-8")), path.name


def test_every_source_id_used_anywhere_resolves():
    bib = datafiles.bibliography()
    cited = {}
    for path in sorted(DATA.rglob("*.json")) + sorted(EXERCISES.glob("*.json")):   # data files and exercises
        if path.name != "sources.json" and path.parent.name != "samples":
            for sid in datafiles.cited_ids(json.loads(path.read_text(encoding="utf-8"))):
                cited.setdefault(sid, path.name)
    for where, sid in _code_citations():        # library code and notebooks' sources
        cited.setdefault(sid, where)
    assert len(cited) >= 90
    missing = {sid: where for sid, where in cited.items() if sid not in bib}
    assert not missing, f"source ids cited but not in data/sources.json: {missing}"


def test_source_lookup_names_the_parameter():
    assert datafiles.source("nccl-tests-212")["url"].endswith("/issues/212")
    with pytest.raises(ValueError, match="source_id"):
        datafiles.source("no-such-source")
    with pytest.raises(ValueError, match="source_id"):
        datafiles.source(None)

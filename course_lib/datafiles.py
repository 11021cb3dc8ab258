"""The course's data files, ``course_lib/data/*.json``: one reader for every module that needs one.

The bibliography lives in one file, ``data/sources.json``: ``{id: {title, url, publisher, year, note?}}``
(``year``: of publication, or for an issue thread of the post cited; null where it was not recorded;
``note``: what the course takes from the source, where the title does not say). Data rows cite it by id
(``"source": "<id>"``, ``"also": [ids]``); :func:`source` is the one lookup.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

SOURCE_FIELDS = ("title", "url", "publisher", "year")


def load(name: str) -> dict:
    """The parsed JSON file ``course_lib/data/<name>``, e.g. ``load("hardware.json")``."""
    return json.loads(resources.files("course_lib").joinpath(f"data/{name}").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _bibliography() -> dict:
    return load("sources.json")


def bibliography() -> dict:
    """Every source of the course: ``{id: {title, url, publisher, year, note?}}`` (a copy)."""
    return {k: dict(v) for k, v in _bibliography().items()}


def source(source_id: str) -> dict:
    """One source of ``data/sources.json`` by id: ``{title, url, publisher, year, note?}`` (a copy)."""
    bib = _bibliography()
    if not isinstance(source_id, str) or source_id not in bib:
        raise ValueError(f"source_id must be an id of course_lib/data/sources.json "
                         f"(e.g. {next(iter(bib))!r}); got {source_id!r}")
    return dict(bib[source_id])


def cited_ids(node: object) -> set[str]:
    """Source ids a data row (or a whole data file) cites: values of ``source``, ``*_source``, ``sources``
    and ``also`` keys, at any depth."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("source", "sources", "also") or key.endswith("_source") or key.endswith("_sources"):
                values = value if isinstance(value, list) else [value]
                found.update(v for v in values if isinstance(v, str))
            if isinstance(value, (dict, list)):
                found |= cited_ids(value)
    elif isinstance(node, list):
        for value in node:
            found |= cited_ids(value)
    return found

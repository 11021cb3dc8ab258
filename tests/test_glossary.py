"""One glossary, linked from every chapter; every listed term defined or linked before its first use."""
import re

import pytest

from course_lib import glossary, manifest

CHAPTERS = manifest.chapters()


def test_the_glossary_page_is_generated_from_its_data():
    assert glossary.MARKDOWN.read_text(encoding="utf-8") == glossary.render(), \
        "run `python -m course_lib.glossary` to rewrite docs/glossary.md"


def test_every_entry_has_a_definition_patterns_and_a_chapter():
    numbers = {c.number for c in CHAPTERS}
    for tid, t in glossary.terms().items():
        assert re.fullmatch(r"[a-z0-9-]+", tid), tid
        assert t["definition"].strip() and t["term"].strip() and t["chapter"] in numbers, tid
        for p in t["patterns"]:
            re.compile(p)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_each_chapter_links_the_glossary_in_its_opening(chapter):
    first = glossary._markdown_cells(chapter.solution_notebook)[0]
    assert f"]({glossary.LINK})" in first, f"{chapter.stem}: its opening cell must link {glossary.LINK}"


def test_every_link_to_an_entry_names_an_entry():
    ids = set(glossary.terms())
    for c in CHAPTERS:
        text = "\n".join(glossary._markdown_cells(c.solution_notebook))
        for tid in re.findall(r"glossary\.md#([\w-]+)", text):
            assert tid in ids, f"{c.stem} links glossary.md#{tid}, which is no entry"


def test_no_chapter_uses_a_term_before_it_is_defined_or_linked():
    problems = glossary.undefined_uses(glossary.course_cells())
    assert not problems, "\n".join(problems)


# Issue 23's findings, as they stood: chapter 05 section 6 and chapter 10 used these words with no
# definition in them or before them. The checker must still find each.
OLD_05_SECTION_6 = """\
3. **Two nodes are special.** NCCL runs that tree by default on some fabrics (EFA, Google's TCPXO) and not
   on others: the InfiniBand and RoCE pairs in the data sit at the NICs' rate.
4. **Configuration beats the model.** A RoCE cluster with PCIe ACS left enabled ran at a fraction of its
   link rate. The model takes the fastest of ring, tree and NVLS that NCCL would run there, each with the
   LL, LL128 or Simple protocol; forced ring, tree and NVLS tree on B200 clusters out to 64 nodes.
- Where every message crosses a plugin (TCPXO, Slingshot's CXI provider, EFA) the model is optimistic.
- at its default 16 SMs the tree needs more SMs than NCCL gives it.
- the author blames congestion from other jobs, and adaptive routing changed the shape but not the trend.
"""
OLD_10 = """\
DeepSeek's **DualPipe** schedule runs one micro-batch's all-to-alls while another micro-batch computes (and DeepEP
does the transfers on a few SMs of their own).
"""
OLD_07 = "A cell shows the model FLOP/s utilisation (MFU) and the memory per GPU."


def test_the_old_chapter_05_and_10_texts_are_caught():
    course = [("05", ["# 05 · InfiniBand", OLD_05_SECTION_6]), ("07", ["# 07", OLD_07]), ("10", ["# 10 · MoE", OLD_10])]
    found = "\n".join(glossary.undefined_uses(course))
    for term in ("TCPXO", "CXI", "SM (", "LL, LL128, Simple", "NVLS tree", "adaptive routing", "ACS", "EFA",
                 "RoCE"):
        assert f"chapter 05: {term}" in found, term
    assert "chapter 07: MFU" in found  # an expansion in brackets is no definition: bold or link it
    assert "chapter 10: SM (" in found  # undefined in chapter 05 does not make it known in chapter 10


def test_a_definition_or_link_before_the_use_satisfies_the_rule_and_one_after_does_not():
    linked = [("05", ["# title", "NCCL's [SM](../docs/glossary.md#sm) budget: 16 SMs."])]
    bold = [("05", ["# title", "A **streaming multiprocessor (SM)** runs blocks.", "16 SMs."])]
    late = [("05", ["# title", "16 SMs.", "A **SM** runs blocks."])]
    earlier = [("02", ["# t", "An **SM** runs blocks."]), ("05", ["# t", "16 SMs."])]
    assert not [p for p in glossary.undefined_uses(linked) if "SM (" in p]
    assert not [p for p in glossary.undefined_uses(bold) if "SM (" in p]
    assert not [p for p in glossary.undefined_uses(earlier) if "SM (" in p]
    assert [p for p in glossary.undefined_uses(late) if "SM (" in p]
    emphasis = [("05", ["# t", "**The model ignores the switch's own latency and the GPU's SMs.**"])]
    assert [p for p in glossary.undefined_uses(emphasis) if "SM (" in p], "a bold sentence is no definition"


def test_one_symbol_per_quantity():
    """k is top-k in every chapter: never the members of a group in one node (chapter 10 used both)."""
    assert glossary.data()["symbols"]["k"].startswith("experts per token")
    for c in CHAPTERS:
        text = "\n".join(glossary._markdown_cells(c.solution_notebook))
        assert not re.search(r"\$k\$ (?:group )?members|\\text\{EP\}-k\b|\{k-1\}\{\\text\{EP\}\}", text), \
            f"{c.stem}: k used for the group members per node; that is g"
    old_10 = r"with $k$ group members per node: $\frac{\text{EP}-k}{\text{EP}}$"
    assert re.search(r"\$k\$ (?:group )?members|\\text\{EP\}-k\b", old_10)

"""The exported reading copy: one page per chapter, each with its explorer's static plot."""
from pathlib import Path

import pytest

from course_lib import export, widgets

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pages(exported_course):
    """The course exported once per run (tests/conftest.py: test_answer_leaks reads the same execution)."""
    return exported_course["out"], exported_course["pages"]


def test_one_page_per_chapter_and_an_index(pages):
    out, rendered = pages
    # every notebook on disk, not the manifest export reads: a chapter left out of course.toml fails here
    chapters = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert len(rendered) == len(chapters)
    index = (out / "index.html").read_text()
    for page in rendered:
        assert page["html"].name in index


def test_every_chapter_shows_a_static_plot(pages):
    _, rendered = pages
    for page in rendered:
        text = page["html"].read_text()
        assert page["images"] >= 1, f"{page['html'].name} has no plot"
        assert "data:image/png;base64" in text, f"{page['html'].name} embeds no image"
        caption = text.find(widgets.STATIC_CAPTION_CLASS)
        assert caption >= 0, f"{page['html'].name} has no explorer static view"
        assert "data:image/png;base64" in text[caption:], f"{page['html'].name}: no plot after the static caption"


def test_bad_input():
    with pytest.raises(ValueError, match="out_dir"):
        export.export_course(None)
    with pytest.raises(ValueError, match="timeout"):
        export.export_course("/tmp/x", timeout=1)
    with pytest.raises(ValueError, match="notebooks"):
        export.export_course("/tmp/x", notebooks=["README.md"])
    with pytest.raises(ValueError, match="jobs"):
        export.export_course("/tmp/x", jobs=0)


def test_slides_open_a_slide_at_each_section(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nintro"),
        nbformat.v4.new_code_cell("1 + 1"),
        nbformat.v4.new_markdown_cell("## 1. A section"),
        nbformat.v4.new_markdown_cell("### 1.1 A subsection"),
        nbformat.v4.new_markdown_cell("text with a # that is not a heading"),
    ])
    assert export.slide_types(nb) == ["slide", "-", "slide", "subslide", "-"]
    path = tmp_path / "99_tiny.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "out"
    pages = export.export_course(out, notebooks=[path], timeout=60, slides=True)
    deck = pages[0]["slides"].read_text()
    assert pages[0]["slides"].name == "99_tiny.slides.html"
    assert "reveal" in deck and deck.count("<section") >= 3
    assert "99_tiny.slides.html" in (out / "index.html").read_text()
    # offline: reveal.js, its theme and plugin, and MathJax load from the export folder, nothing from the web
    import re
    loaded = re.findall(r'<(?:script|link)[^>]*\s(?:src|href)="([^"]+)"', deck)
    assert "reveal/dist/reveal.js" in loaded and "reveal/plugin/notes/notes.js" in loaded, loaded
    assert [url for url in loaded if re.match(r"(https?:)?//", url)] == [], loaded
    assert "import mermaid" not in deck and "require(" not in deck
    for url in loaded:
        assert (out / url.split("?")[0]).is_file(), f"the deck loads {url}, which the export did not write"
    theme = (out / "reveal" / "dist" / "theme" / f"{export.REVEAL_THEME}.css").read_text()
    assert "http" not in "".join(re.findall(r"@import[^;]*;", theme)), "the theme imports from the web"
    with pytest.raises(ValueError, match="slides"):
        export.export_course(out, notebooks=[path], slides="yes")


def test_maths_is_served_from_the_export_folder_not_a_cdn(tmp_path):
    """Issue 26.6: exported HTML renders maths offline: MathJax is copied next to the pages and loaded from there;
    an explorer's dead widget view is dropped so its static view shows."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Maths\n$$t = \\alpha + \\frac{n}{B}$$"),
                                         nbformat.v4.new_code_cell("1 + 1")])
    path = tmp_path / "98_maths.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "site"
    pages = export.export_course(out, notebooks=[path], timeout=60)
    page = pages[0]["html"].read_text()
    assert 'src="mathjax/MathJax.js?config=' in page
    import re
    assert not re.findall(r'<script[^>]*\ssrc="https?://', page), "a script loads from the network"  # MathJax, require.js
    assert (out / "mathjax" / "MathJax.js").is_file()
    config = export.MATHJAX_CONFIG.split(",")[0]
    assert (out / "mathjax" / "config" / f"{config}.js").is_file()

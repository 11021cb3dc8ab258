"""Render the course, with outputs, to static HTML for reading without a kernel.

``python -m course_lib export DIR`` executes every student notebook (exercises
show "not answered yet": a reading copy gives nothing away), writes
``DIR/NN_name.html`` for each and an ``index.html`` linking them. The explorers'
static views (plot and readout) show in every page: the live widget views are dropped
(``notebook_save.static_fallback``), as they need a kernel. Maths renders offline: MathJax 2
comes from the ``jupyter-server-mathjax`` package and is copied to ``DIR/mathjax/`` once; the
pages load it from there, never from a CDN (nor require.js, which only widget views need).

With ``--slides`` each chapter is also written as a reveal.js slide deck,
``DIR/NN_name.slides.html`` (nbconvert's slides exporter): every section heading
(``#`` or ``##``) opens a new slide, ``###`` a sub-slide below it, so an instructor
can present a chapter without preparing slides. The decks work offline too: reveal.js (from the
``sphinx-revealjs`` package, the ``instructor`` extra) is copied to ``DIR/reveal/`` once and loaded
from there, with MathJax from ``DIR/mathjax/`` (``data/slides_offline.html.j2``).
"""
from __future__ import annotations

import copy
import html
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import cli, manifest, notebook_save, validate
from .progress import Progress

MATHJAX_DIR = "mathjax"  # under the export folder
REVEAL_DIR = "reveal"  # under the export folder
SLIDES_TEMPLATE = Path(__file__).parent / "data" / "slides_offline.html.j2"
# what a deck loads from reveal.js (sphinx-revealjs's copy of its release): the script, its styles, the
# white theme with its web font (woff; nbconvert's default theme, simple, loads its fonts from the web), the
# speaker-notes plugin
REVEAL_THEME = "white"
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", f"dist/theme/{REVEAL_THEME}.css",
                "dist/theme/fonts/source-sans-pro/source-sans-pro.css", "plugin/notes/notes.js", "LICENSE")
REVEAL_FONTS = "dist/theme/fonts/source-sans-pro"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"  # the combined configuration the package ships
# The package ships MathJax's STIX web fonts only (no TeX fonts): use them rather than the browser's.
MATHJAX_FONTS = ('<script type="text/x-mathjax-config">MathJax.Hub.Config({"HTML-CSS": '
                 '{availableFonts: [], webFont: "STIX-Web", imageFont: null}});</script>\n')

class ExportError(RuntimeError):
    """A notebook could not be executed (a failing cell, a timeout, a dead kernel); one line, naming it."""


def _title(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE)
            if match:
                return match.group(1).strip()
    return fallback


def slide_types(nb) -> list[str]:
    """nbconvert slide type per cell: ``slide`` at a ``#``/``##`` heading, ``subslide`` at ``###``, else ``-``."""
    types = []
    for index, cell in enumerate(nb.cells):
        first = cell.source.lstrip().split("\n", 1)[0] if cell.cell_type == "markdown" else ""
        if index == 0 or re.match(r"^#{1,2}\s", first):
            types.append("slide")
        elif re.match(r"^###\s", first):
            types.append("subslide")
        else:
            types.append("-")
    return types


def _write_slides(nb, target: Path) -> None:
    from nbconvert import SlidesExporter

    nb = copy.deepcopy(nb)
    for cell, kind in zip(nb.cells, slide_types(nb)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    body, _ = SlidesExporter(mathjax_url=mathjax_url(), reveal_url_prefix=REVEAL_DIR, reveal_theme=REVEAL_THEME,
                             template_file=str(SLIDES_TEMPLATE)).from_notebook_node(nb)
    target.write_text(_with_mathjax_fonts(body), encoding="utf-8")


def _with_mathjax_fonts(body: str) -> str:
    """``body`` with MathJax told to use the fonts the package ships, before MathJax loads."""
    return body.replace(f'<script src="{mathjax_url()}">', MATHJAX_FONTS + f'<script src="{mathjax_url()}">', 1)


def mathjax_url() -> str:
    """MathJax's address in an exported page: the folder ``vendor_mathjax`` fills, relative to the page."""
    return f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"


def _package_folder(package: str, inside: str, needs: str, install: str, what: str) -> Path:
    """``inside`` of an installed ``package`` (found without importing it), holding ``needs``; else one line."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ExportError(f"{package.replace('_', '-')} is not installed ({install}): {what} would need a CDN")
    source = Path(list(spec.submodule_search_locations)[0]) / inside
    if not (source / needs).is_file():
        raise ExportError(f"{source} holds no {needs}: reinstall {package.replace('_', '-')}")
    return source


def vendor_mathjax(out_dir) -> Path:
    """Copy MathJax (from the ``jupyter-server-mathjax`` package) to ``out_dir/mathjax``; returns that folder."""
    import shutil

    source = _package_folder("jupyter_server_mathjax", "static", "MathJax.js", "pip install -e .", "exported maths")
    target = Path(out_dir) / MATHJAX_DIR
    shutil.copytree(source, target, dirs_exist_ok=True)
    return target


def vendor_reveal(out_dir) -> Path:
    """Copy what a deck needs of reveal.js (``REVEAL_FILES``, the theme's woff fonts) from the ``sphinx-revealjs``
    package to ``out_dir/reveal``; returns that folder."""
    import shutil

    source = _package_folder("sphinx_revealjs", "_static/revealjs", "dist/reveal.js",
                             "pip install -e '.[instructor]'", "the slides")
    target = Path(out_dir) / REVEAL_DIR
    fonts = [f"{REVEAL_FONTS}/{p.name}" for p in (source / REVEAL_FONTS).glob("*.woff")]
    for name in (*REVEAL_FILES, *fonts):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target / name)
    return target


def export_notebook(path: Path, out_dir: Path, timeout: int = 300, slides: bool = False) -> dict:
    """Execute one notebook and write it as HTML (and slides).

    Returns {'html', 'title', 'images', 'slides', 'notebook'}: 'notebook' is the executed notebook, with the
    outputs the page shows (the tests reuse it rather than execute the chapter a second time).
    """
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import ExecutePreprocessor

    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    import tempfile

    from jupyter_client.manager import KernelManager

    nb = nbformat.read(path, as_version=4)
    try:
        # No widget state: each explorer's output then renders as its static view (plot and readout)
        # rather than as a widget that needs a kernel or a CDN. The kernel talks over IPC sockets in a
        # private folder, not plain TCP (which ipykernel warns about on every start).
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as sockets:
            km = (KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
                  if os.name == "posix" else None)  # Windows has no IPC sockets: TCP there
            try:
                ExecutePreprocessor(timeout=timeout, kernel_name="python3", store_widget_state=False).preprocess(
                    nb, {"metadata": {"path": str(path.parent)}}, km=km)
            finally:  # nbclient shuts down only a kernel it made itself: this one is ours to stop
                if km is not None and km.has_kernel:
                    km.shutdown_kernel(now=True)
    except CellTimeoutError:
        raise ExportError(f"{path.name}: a cell ran past the {timeout} s limit (--timeout)") from None
    except DeadKernelError:
        raise ExportError(f"{path.name}: the kernel died while running it") from None
    except CellExecutionError as exc:
        last = [line for line in str(exc).splitlines() if line.strip()]
        raise ExportError(f"{path.name}: a cell failed: {cli.one_line(last[-1] if last else exc)[:200]}") from None
    notebook_save.static_fallback(nb)
    exporter = HTMLExporter(template_name="lab", mathjax_url=mathjax_url())
    body, _ = exporter.from_notebook_node(nb)
    # require.js (from a CDN) serves widget views only; the pages carry none, so they load nothing remote
    body = body.replace(f'<script src="{exporter.require_js_url}"></script>', "")
    body = _with_mathjax_fonts(body)
    target = out_dir / f"{path.stem}.html"
    target.write_text(body, encoding="utf-8")
    images = sum(1 for cell in nb.cells if cell.cell_type == "code"
                 for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))
    deck = None
    if slides:
        deck = out_dir / f"{path.stem}.slides.html"
        _write_slides(nb, deck)
    return {"html": target, "title": _title(nb, path.stem), "images": images, "slides": deck, "notebook": nb}


def export_course(out_dir, notebooks=None, timeout: int = 300, slides: bool = False, jobs=None) -> list[dict]:
    """Export every chapter of course.toml (or the given notebook paths) to ``out_dir``; writes index.html.

    ``timeout``: seconds per cell, in [10, 3600]; ``slides``: also write a slide deck per chapter;
    ``jobs``: notebooks executed at once, in [1, 64] (default: the CPU count), each in its own kernel.
    """
    if not isinstance(out_dir, (str, Path)):
        raise ValueError(f"out_dir must be a folder path, got {out_dir!r}")
    timeout = validate.integer("timeout", timeout, low=10, high=3600)
    jobs = validate.integer("jobs", (os.cpu_count() or 1) if jobs is None else jobs, low=1, high=64)
    if not isinstance(slides, bool):
        raise ValueError(f"slides must be True or False, got {slides!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in notebooks] if notebooks else [c.student_notebook for c in manifest.chapters()]
    for path in paths:
        if not path.is_file() or path.suffix != ".ipynb":
            raise ValueError(f"notebooks must be .ipynb files; {path} is not one")
    vendor_mathjax(out_dir)
    if slides:
        vendor_reveal(out_dir)
    chapters_done = Progress(len(paths), "export", "chapters")

    def one(path):
        page = export_notebook(path, out_dir, timeout, slides)
        chapters_done.update(1, note=f"{path.stem} written")
        return page

    try:
        with ThreadPoolExecutor(max_workers=min(jobs, len(paths) or 1)) as pool:  # kernels are processes
            pages = list(pool.map(one, paths))
    finally:
        chapters_done.close()
    items = "\n".join(
        f'<li><a href="{html.escape(p["html"].name)}">{html.escape(p["title"])}</a>'
        + (f' (<a href="{html.escape(p["slides"].name)}">slides</a>)' if p["slides"] else "") + "</li>"
        for p in pages)
    (out_dir / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>GPU interconnects for distributed training</title>"
        "<h1>GPU interconnects for distributed training</h1>"
        "<p>A reading copy of the course, rendered with outputs. The sliders need a live kernel "
        "(<code>make lab</code>); each explorer's static plot is shown here.</p>"
        f"<ol>{items}</ol>\n", encoding="utf-8")
    return pages


def _add_arguments(p) -> None:
    p.add_argument("out_dir", help="folder to write the HTML pages into")
    p.add_argument("--timeout", type=cli.integer(low=10, high=3600), default=300, help="seconds per cell (default 300)")
    p.add_argument("--slides", action="store_true", help="also write a reveal.js slide deck per chapter")
    p.add_argument("--jobs", type=cli.integer(low=1, high=64), default=None,
                   help="notebooks executed at once (default: CPU count)")
    p.set_defaults(func=_cli)


def register(sub) -> None:
    _add_arguments(sub.add_parser("export", help="render the course with outputs to static HTML"))


def _cli(args) -> int:
    if Path(args.out_dir).exists() and not Path(args.out_dir).is_dir():
        raise ValueError(f"out_dir {args.out_dir!r} is a file, not a folder")
    try:
        pages = export_course(args.out_dir, timeout=args.timeout, slides=args.slides, jobs=args.jobs)
    except OSError as exc:
        raise ValueError(f"out_dir {args.out_dir!r} cannot be written: {exc.strerror or exc}") from None
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for page in pages:
        deck = f"  slides: {page['slides'].name}" if page["slides"] else ""
        print(f"{page['html']}  ({page['images']} plots)  {page['title']}{deck}")
    print(f"{len(pages)} chapters + index.html in {args.out_dir}")
    return 0


def main(argv=None) -> int:
    """``python -m course_lib.export OUT_DIR``: the same as ``python -m course_lib export``."""
    parser = cli.ArgumentParser(prog="python -m course_lib.export", description=__doc__.splitlines()[0])
    _add_arguments(parser)
    return cli.run(parser, argv)


if __name__ == "__main__":
    cli.exit_with(main)

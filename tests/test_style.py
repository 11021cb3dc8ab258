"""One palette (course_lib.style): the same category has the same colour in every chapter."""
import ast
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from course_lib import collectives, parallel, style
from course_lib.chapters import collectives as ch04, model_parallel as ch07, planner as ch08


def test_chapters_07_and_08_colour_a_training_step_the_same_way():
    assert ch07.BREAKDOWN_COLOURS is style.STEP_COLOURS and ch08.BREAKDOWN_COLOURS is style.STEP_COLOURS
    est = parallel.estimate(parallel.model("gpt3-175b"), "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536)
    assert set(est.breakdown()) == set(style.STEP_COLOURS)


def test_every_algorithm_id_has_a_colour():
    for collective in collectives.ids():
        for algorithm in collectives.algorithm_ids(collective):
            assert style.colour("algorithm", algorithm)
    assert set(ch04.ALGORITHMS) <= set(style.ALGORITHM_COLOURS)


def test_colour_names_a_bad_kind_or_key():
    with pytest.raises(ValueError, match="kind"):
        style.colour("flavour", "ring")
    with pytest.raises(ValueError, match="key"):
        style.colour("algorithm", "carrier-pigeon")


def test_axis_helpers_write_units():
    fig, ax = plt.subplots()
    ax.plot([2**10, 2**30], [1e-6, 1e-1])
    style.bytes_axis(ax, "x")
    style.time_axis(ax, "y", log=True)
    style.decorate(ax, title="t", xlabel="size", ylabel="time")
    fig.canvas.draw()
    xlabels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert any("MiB" in s or "GiB" in s for s in xlabels), xlabels
    assert any(s.endswith(("us", "ms")) for s in ylabels), ylabels
    assert ax.get_xscale() == "log" and ax.get_title() == "t"
    with pytest.raises(ValueError, match="axis"):
        style.bytes_axis(ax, "z")
    plt.close(fig)


def _drawing_modules():
    """Every module of the views and the chapters, packages walked (views.graphs draws topologies with style's colours)."""
    import importlib
    import pkgutil

    import course_lib.chapters
    import course_lib.views
    names = [info.name for package in (course_lib.views, course_lib.chapters)
             for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [importlib.import_module(n) for n in names]


def test_no_view_or_explorer_keeps_a_palette_of_its_own():
    palettes = {id(v) for name, v in vars(style).items() if name.endswith("COLOURS")}
    for module in _drawing_modules():
        own = [name for name, v in vars(module).items()
               if name.upper().lstrip("_").endswith("COLOURS") and id(v) not in palettes]
        assert not own, f"{module.__name__} defines {own}: put the colours in course_lib.style"


def test_chapter_06_memory_uses_the_memory_palette():
    from course_lib.chapters import data_parallel as ch06
    fig, ax = plt.subplots()
    ch06.draw_zero_memory(ax=ax)
    faces = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    plt.close(fig)
    assert {style.colour("memory", part) for part in ("weights", "gradients", "optimizer")} <= faces


# --- the palette lint: every colour and font size of the drawing code is a name of course_lib.style ---
# Drawing code: views/ (topology graphs too: views.graphs), explorers/ and chapters/. style.py itself is not scanned.

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "course_lib"
DRAWING_DIRS = ("views", "explorers", "chapters")
COLOUR_KEYWORDS = {"color", "colour", "c", "colors", "colours", "facecolor", "facecolors", "edgecolor", "edgecolors",
                   "fc", "ec", "mfc", "mec", "markerfacecolor", "markeredgecolor", "labelcolor", "ecolor"}
FONT_KEYWORDS = {"fontsize", "labelsize", "title_fontsize"}
PLOT_CALLS = {"plot", "loglog", "semilogx", "semilogy"}   # their positional strings are format strings ("k--")
_CODE = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?(?:[0-9a-fA-F]{2})?|tab:\w+|xkcd:[\w ]+|C\d+")
# Colour names a figure uses: a literal with one of these names is a colour wherever it stands.
_NAMES = {"black", "white", "red", "green", "blue", "orange", "purple", "gray", "grey", "cyan", "magenta", "yellow",
          "brown", "pink", "olive", "navy", "teal", "lightgray", "lightgrey", "darkgray", "darkgrey"}
CMAP_CALLS = {"get_cmap", "colormaps", "ListedColormap", "LinearSegmentedColormap"}


def _named_colour(text):
    """Whether ``text`` is a colour matplotlib would draw (a name, a grey level '0.3', a code); 'none' is not."""
    from matplotlib.colors import is_color_like
    return text.lower() != "none" and is_color_like(text)


def _format_colour(fmt):
    """Whether the plot format string ``fmt`` ('o-', 'k--') names a colour."""
    from matplotlib.axes._base import _process_plot_format
    try:
        return _process_plot_format(fmt)[2] is not None
    except ValueError:
        return False


def _numbers(node):
    """Numeric literals in an arithmetic expression (not inside calls or names): 8, -1, size + 2, 8 if a else 9."""
    if isinstance(node, ast.Constant):
        return [node] if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else []
    if isinstance(node, ast.UnaryOp):
        return _numbers(node.operand)
    if isinstance(node, ast.BinOp):
        return _numbers(node.left) + _numbers(node.right)
    if isinstance(node, ast.IfExp):
        return _numbers(node.body) + _numbers(node.orelse)
    return []


def _colours(node):
    """Colour literals anywhere in an expression given as a colour ("white" if dark else "black", f"C{i}", ...)."""
    out = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _named_colour(sub.value):
            out.append(sub)
        elif isinstance(sub, ast.JoinedStr) and sub.values and isinstance(sub.values[0], ast.Constant) \
                and re.fullmatch(r"C|tab:|xkcd:|#", str(sub.values[0].value)):
            out.append(sub)
    return out


def _name(node):
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def palette_violations(source, filename="<source>"):
    """'file:line: what' for every colour literal and numeric font size in ``source`` (a module's text)."""
    tree = ast.parse(source, filename)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = {}

    def colour(node, why):
        found.setdefault((node.lineno, node.col_offset), f"colour literal {ast.unparse(node)} ({why})")

    def font(node, why):
        found.setdefault((node.lineno, node.col_offset), f"font size {ast.unparse(node)} ({why})")

    def keyword(key, value, where):
        if key in COLOUR_KEYWORDS:
            for lit in _colours(value):
                colour(lit, f"{where} {key}")
        if key == "cmap" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            colour(value, f"{where} cmap")
        if key in FONT_KEYWORDS:
            for lit in _numbers(value):
                font(lit, f"{where} {key}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and (_CODE.fullmatch(node.value) or node.value.lower() in _NAMES):
            colour(node, "a colour code" if _CODE.fullmatch(node.value) else "a colour name")
        elif isinstance(node, ast.JoinedStr) and len(node.values) == 2 and isinstance(node.values[0], ast.Constant) \
                and node.values[0].value in ("C", "tab:", "xkcd:"):
            colour(node, "a colour code")
        elif isinstance(node, ast.Subscript) and _name(node.value) == "colormaps" \
                and isinstance(node.slice, ast.Constant):
            colour(node.slice, "a colour map")
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg:
                    keyword(kw.arg, kw.value, "argument")
            name = _name(node.func)
            if name in CMAP_CALLS:   # plt.get_cmap("Blues"): a colour map is a palette too
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        colour(arg, f"a colour map in {name}")
            if name.endswith(("color", "colour")) and name != "colour":   # ax.set_facecolor("white")
                for arg in node.args:
                    for lit in _colours(arg):
                        colour(lit, f"argument of {name}")
            if name in PLOT_CALLS or name == "errorbar":
                fmts = node.args[1:] if name in PLOT_CALLS else [k.value for k in node.keywords if k.arg == "fmt"]
                for arg in fmts:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _format_colour(arg.value):
                        colour(arg, f"format string of {name}")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keyword(key.value, value, "dict key")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args.posonlyargs + node.args.args
            pairs = list(zip(args[len(args) - len(node.args.defaults):], node.args.defaults))
            pairs += [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None]
            for arg, default in pairs:
                keyword(arg.arg, default, "default of")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            # a number of 5-20 assigned to a size is a font size in points (size = 8.5 * ...), not 1e6 bytes
            sized = [_name(t) for t in targets if _name(t).lower().endswith(("fontsize", "font_size", "points", "size"))]
            for lit in (_numbers(node.value) if sized and node.value is not None else []):
                if 5 <= abs(lit.value) <= 20:
                    font(lit, "assigned to " + ", ".join(sized))
    return [f"{filename}:{line}: {what}" for (line, _), what in sorted(found.items())]


def drawing_sources():
    """Every module of the drawing code, as a path relative to the repository."""
    return sorted(p for d in DRAWING_DIRS if (PACKAGE / d).is_dir() for p in (PACKAGE / d).rglob("*.py"))


def test_drawing_code_names_every_colour_and_font_size_from_style():
    bad = [v for path in drawing_sources()
           for v in palette_violations(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert not bad, (f"{len(bad)} colour literals or numeric font sizes outside course_lib/style.py; name them "
                     "there (style.INK, style.FONT_SMALL, style.colour(...)):\n" + "\n".join(bad))


@pytest.mark.parametrize("line, named", [
    ('ax.plot(x, y, "o-", color="tab:red")', "'tab:red' (argument color)"),
    ('ax.text(0, 0, "t", color="0.3")', "'0.3' (argument color)"),
    ('ax.text(0, 0, "t", bbox={"fc": "white", "ec": "none"})', "'white' (dict key fc)"),
    ('ax.set_facecolor("#eeeeee")', "'#eeeeee' (argument of set_facecolor)"),
    ('REGIMES = (("#1f77b4", "o"), ("k", "D"))', "'#1f77b4' (a colour code)"),
    ('ax.plot(x, y, "k--")', "'k--' (format string of plot)"),
    ('edge = "black" if chosen else "none"', "'black' (a colour name)"),
    ('colours = [f"C{i}" for i in range(3)]', "f'C{i}' (a colour code)"),
    ('cmap = plt.get_cmap("Blues")', "'Blues' (a colour map in get_cmap)"),
    ('ax.bar(x, y, color=[c if v else "k" for v in y])', "'k' (argument color)"),
    ('ax.legend(fontsize=9)', "font size 9 (argument fontsize)"),
    ('ax.set_title(t, fontsize=fontsize + 2)', "font size 2 (argument fontsize)"),
    ('ax.tick_params(labelsize=8.5)', "font size 8.5 (argument labelsize)"),
    ('def draw(ax, fontsize=8): pass', "font size 8 (default of fontsize)"),
    ('self.size = 8.0 * max(1.0, w / 7.5)', "font size 8.0 (assigned to size)"),
])
def test_the_palette_lint_names_a_planted_literal(line, named):
    assert palette_violations(line, "planted.py") == [f"planted.py:1: colour literal {named}"
                                                      if not named.startswith("font") else f"planted.py:1: {named}"]


@pytest.mark.parametrize("line", [
    'def draw(ax):\n    """Says "#1f77b4", tab:red and black."""',
    'ax.plot(x, y, "o-", color=style.YOURS, mfc=style.PAPER)',
    'ax.text(0, 0, "t", fontsize=style.FONT_SMALL, bbox={"ec": "none"})',
    'ax.set_title(t, fontsize=style.larger(fontsize, 2))',
    'size = size_mb * 1e6',
    'ax.text(0, 0, "red hops leave the node")',
])
def test_the_palette_lint_leaves_named_colours_and_prose_alone(line):
    assert palette_violations(line, "ok.py") == []


def test_the_palette_lint_fails_on_a_literal_planted_in_a_real_view(tmp_path):
    """The lint's own message, on a copy of a view with one literal planted (what a contributor would see)."""
    view = PACKAGE / "views" / "pcie.py"
    lines = view.read_text().split("\n")
    at = next(i for i, text in enumerate(lines) if "color=style.YOURS" in text)
    lines[at] = lines[at].replace("color=style.YOURS", 'color="tab:red"', 1)
    found = palette_violations("\n".join(lines), "course_lib/views/pcie.py")
    assert found == [f"course_lib/views/pcie.py:{at + 1}: colour literal 'tab:red' (argument color)"]


def test_named_sizes_and_series_helpers():
    assert style.FONT_SMALL < style.FONT_NORMAL < style.FONT_TITLE
    assert style.larger(style.FONT_SMALL, 2) == style.FONT_SMALL + 2
    assert [style.series(k) for k in range(len(style.SERIES_COLOURS) + 1)] == \
        list(style.SERIES_COLOURS) + [style.SERIES_COLOURS[0]]
    fig = plt.figure(figsize=(2 * style.NOTEBOOK_WIDTH_IN, 3))
    assert style.notebook_points(fig, style.READABLE_POINTS) == pytest.approx(style.readable_points(fig))
    assert style.notebook_points(fig) == pytest.approx(2 * style.FONT_SMALL)   # drawn twice as large, shrunk by 2
    plt.close(fig)


def test_every_phase_and_regime_has_a_colour():
    from course_lib import costmodel
    phases = {t["phase"] for step in range(1, 7) for t in ch04.ring_step_info(step, 4)["transfers"]}
    assert phases == set(style.PHASE_COLOURS)
    assert len(style.REGIME_COLOURS) >= len(costmodel.SCALE_REGIMES)   # the view zips them: none may go undrawn

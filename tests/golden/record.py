"""Record (or print) the course's golden outputs: what the CLI and every explorer print today.

    python tests/golden/record.py          # rewrite tests/golden/*.txt from the current code
    python tests/golden/record.py --check  # exit 1 and list the cases that differ

A golden file changes only on purpose: the commit that changes one says which numbers moved and why.
``tests/test_golden.py`` runs the same cases and compares them with the files.
"""
from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cli(*argv) -> str:
    from course_lib.__main__ import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return f"$ python -m course_lib {' '.join(argv)}\n{out.getvalue()}[exit {status}]\n"


def _cli_cases() -> dict[str, list[tuple]]:
    from course_lib import hardware
    predict = []
    for sid in hardware.system_ids():
        predict.append(("predict", "all_reduce", "--system", sid, "-b", "32K", "-e", "16G", "-f", "2"))
        for coll in ("reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"):
            predict.append(("predict", coll, "--system", sid, "-b", "32K", "-e", "16G", "-f", "8"))
        if hardware.system(sid).nics_per_node:
            for nodes in ("2", "4", "32"):
                predict.append(("predict", "all_reduce", "--system", sid, "--nodes", nodes,
                                "-b", "32K", "-e", "16G", "-f", "4"))
    return {
        "catalog": [("systems",), ("systems", "--json"), ("links",), ("links", "--json")],
        "predict": predict,
        "validation": [("validation",), ("validation", "--details"), ("validation", "--json")],
        "plan": [("plan", "--validate"), ("plan", "--validate", "--json"),
                 ("plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--search"),
                 ("plan", "--model", "llama2-70b", "--system", "dgx-h200", "--gpus", "512", "--search"),
                 ("plan", "--model", "megatron-18.4b", "--system", "dgx-h100", "--gpus", "256", "--search"),
                 ("plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--tp", "8",
                  "--pp", "16"),
                 # expert, context and sharded data parallelism (issue 16)
                 ("plan", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "64", "--ep", "8",
                  "--global-batch", "256", "--seq-len", "4096", "--recompute", "selective", "--zero", "1"),
                 ("plan", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--cp", "4",
                  "--seq-len", "131072", "--global-batch", "16", "--fsdp"),
                 ("plan", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "256", "--hsdp", "32",
                  "--global-batch", "256"),
                 ("plan", "--validate-modern")],
    }


# Every explorer the chapters show, built at its defaults: (module, function).
EXPLORERS = [
    ("gradients", "gradient_exchange_explorer"), ("pcie", "pcie_explorer"), ("pcie", "offload_explorer"),
    ("nvlink", "mesh_explorer"), ("nvswitch", "fabric_explorer"), ("collectives", "ring_explorer"),
    ("collectives", "cost_explorer"), ("infiniband", "cliff_explorer"), ("data_parallel", "dp_scaling_explorer"),
    ("model_parallel", "layout_explorer"), ("model_parallel", "schedule_explorer"), ("planner", "planner_explorer"),
]


def _explorer_readouts() -> str:
    import importlib

    import matplotlib
    matplotlib.use("Agg")
    lines = []
    for module, func in EXPLORERS:
        mod = importlib.import_module(f"course_lib.chapters.{module}")
        with contextlib.redirect_stdout(io.StringIO()):
            handle = getattr(mod, func)()
        lines.append(f"{module}.{func} {handle.values()}\n  {handle.readout}\n")
    return "".join(lines)


def outputs() -> dict[str, str]:
    """File name -> text, for every golden file."""
    files = {f"{name}.txt": "\n".join(_cli(*argv) for argv in cases) for name, cases in _cli_cases().items()}
    files["explorers.txt"] = _explorer_readouts()
    return files


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    differ = []
    for name, text in outputs().items():
        path = HERE / name
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                differ.append(name)
        else:
            path.write_text(text)
    if differ:
        print("golden outputs differ: " + ", ".join(differ))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

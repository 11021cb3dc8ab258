"""Command line: ``python -m course_lib COMMAND``.

``systems`` and ``links`` (the hardware catalog) are defined here; every other command is added by
the ``register(subparsers)`` of a ``cli_*`` or tool module that ``_load_extra_commands`` imports:
``cli_predict`` (predict, compare, validation), ``cli_plan`` (plan), ``export``, ``instructor`` (nbgrader)
and ``cli_inspect`` (inspect); a module missing from a copy of the package is skipped.
"""
from __future__ import annotations

import argparse

from . import cli, datafiles, hardware, tables, units


FABRIC_HEADER = "GPU fabric (per direction / bidirectional)"


def systems_table(systems) -> str:
    """The catalog as text: one row per system, each column as wide as its widest entry (ids, fabrics
    and networks of any length line up), a rule under the header."""
    rows = []
    for s in systems:
        fabric = (f"{s.gpu_link.name}: {units.format_bandwidth(s.gpu_link.per_direction)} / "
                  f"{units.format_bandwidth(s.gpu_link.bidirectional, direction='bidirectional').rsplit(' ', 1)[0]}")
        net = f"{s.nics_per_node} x {s.nic.name}" + (f" ({s.fabric})" if s.nic_fabric != hardware.default_fabric(s.nic.family) else "")
        rows.append({"id": s.id, "GPUs": s.gpus_per_node, FABRIC_HEADER: fabric, "network per node": net})
    lines = tables.text_table(rows).split("\n")
    depth = len(lines) - len(rows)  # header lines
    return "\n".join([*lines[:depth], "-" * max(len(line) for line in lines), *lines[depth:]])


def _systems(args) -> int:
    rows = [hardware.system_summary(s) for s in hardware.systems()]
    if args.json:
        print(cli.dumps(rows))
        return 0
    print(systems_table(hardware.systems()))
    print("\nSources: python -m course_lib systems --json (each system cites its source)")
    return 0


def _links(args) -> int:
    rows = hardware.links()
    if args.json:
        print(cli.dumps([{"id": l.id, "name": l.name, "family": l.family,
                           "gb_s_per_direction": l.per_direction / units.GB,
                           "gb_s_bidirectional": l.bidirectional / units.GB,
                           "detail": l.detail, "source": datafiles.source(l.source)} for l in rows]))
        return 0
    for l in rows:
        print(f"{l.id:<16} {l.describe()}  [{l.detail}]")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(prog="python -m course_lib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("systems", help="list the systems in the hardware catalog")
    p.add_argument("--json", action="store_true", help="print JSON with sources")
    p.set_defaults(func=_systems)
    p = sub.add_parser("links", help="list the links in the hardware catalog")
    p.add_argument("--json", action="store_true", help="print JSON with sources")
    p.set_defaults(func=_links)
    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


# Filled by _load_extra_commands with each command module's register(subparsers), in that order.
_EXTRA_COMMANDS: list = []


def _load_extra_commands():
    import importlib
    _EXTRA_COMMANDS.clear()  # main() may run more than once in one process (tests, notebooks)
    for name in ("course_lib.cli_predict", "course_lib.cli_plan", "course_lib.export", "course_lib.instructor", "course_lib.cli_inspect"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        _EXTRA_COMMANDS.append(module.register)


def main(argv=None) -> int:
    """Run one command; bad input gives one line ``error: ...`` and status 2 (see ``cli``)."""
    _load_extra_commands()
    return cli.run(build_parser(), argv)


if __name__ == "__main__":
    cli.exit_with(main)

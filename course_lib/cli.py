"""The one error path of every course command: bad input gives one line ``error: ...`` and exit status 2.

Every command line of the course (``python -m course_lib ...``, ``python -m course_lib.export``, the
lab's benchmark) builds its parser with :class:`ArgumentParser` and runs its handler through
:func:`run`, so a learner never meets a traceback for a typo:

* argparse's own complaints (unknown flag, ``--nodes abc``, a missing argument) become one line,
  naming the argument, with exit status 2 (argparse prints a usage block and the message);
* a ``ValueError`` raised by the library (whose message names the parameter and its allowed range,
  see ``validate``) becomes ``error: <message>`` on one line, exit status 2;
* Ctrl-C prints ``error: interrupted`` (status 130); a closed pipe (``... --json | head``) ends
  quietly with status 0, as the reader took what it wanted.

Typed converters (:func:`integer`, :func:`number`) give argparse the allowed range, so
``--nodes abc`` says ``argument --nodes: must be an integer >= 1; got 'abc'``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from typing import Callable, NoReturn, Sequence, TextIO

from . import validate
from .textfiles import read_text  # noqa: F401 (the one reader of a learner's file; commands call cli.read_text)

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def one_line(message: object) -> str:
    """``message`` as one line: whitespace (newlines included) collapsed to single spaces."""
    return " ".join(str(message).split())


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line ``error: ...`` on stderr and exit status 2.

    Subparsers made with ``add_subparsers`` inherit the class, so sub-commands behave alike.
    """

    def error(self, message: str) -> NoReturn:  # noqa: D102 (argparse's hook)
        self.exit(EXIT_USAGE, f"error: {one_line(message)} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:  # noqa: D102 (argparse's hook): a bad choice gets a suggestion
        if action.choices is not None and value not in action.choices:
            names = [str(c) for c in action.choices]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {', '.join(names)})"
                                                 f"{validate.did_you_mean(value, names)}")


def _range_text(low: float | None, high: float | None, low_inclusive: bool = True, high_inclusive: bool = True) -> str:
    if low is not None and high is not None:
        return f"in {'[' if low_inclusive else '('}{low:g}, {high:g}{']' if high_inclusive else ')'}"
    if low is not None:
        return f"{'>=' if low_inclusive else '>'} {low:g}"
    if high is not None:
        return f"{'<=' if high_inclusive else '<'} {high:g}"
    return "any value"


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in [low, high]; argparse's message names the flag and the range."""
    def convert(text: str) -> int:
        try:
            value = int(text, 10)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"must be an integer {_range_text(low, high)}; got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            shown = text if len(text) <= 24 else text[:21] + "..."
            raise argparse.ArgumentTypeError(f"must be an integer {_range_text(low, high)}; got {shown}")
        return value
    convert.__name__ = "integer"
    return convert


def number(low: float | None = None, high: float | None = None, *, low_inclusive: bool = True,
           high_inclusive: bool = True) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in the range; argparse's message names the flag and the range."""
    rng = _range_text(low, high, low_inclusive, high_inclusive)

    def convert(text: str) -> float:
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"must be a number {rng}; got {text!r}") from None
        too_low = low is not None and (value < low if low_inclusive else value <= low)
        too_high = high is not None and (value > high if high_inclusive else value >= high)
        if not math.isfinite(value) or too_low or too_high:
            raise argparse.ArgumentTypeError(f"must be a finite number {rng}; got {text}")
        return value
    convert.__name__ = "number"
    return convert


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's final flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def report(message: object) -> int:
    """Print ``error: <message>`` as one line on stderr; return the usage status (2)."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def _options(parser: argparse.ArgumentParser, args: argparse.Namespace | None = None) -> dict:
    """dest -> option strings (``"-g/--ngpus"``) of ``parser`` and of the sub-command ``args`` chose."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices.get(getattr(args, action.dest, None))
            if sub is not None:
                for dest, flag in _options(sub, args).items():
                    out.setdefault(dest, flag)
        elif action.option_strings and action.dest != "help":
            out.setdefault(action.dest, "/".join(action.option_strings))
    return out


def _with_flag(message: str, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """Prefix a library message that starts with a parameter name with the flag that sets it.

    ``gpus_per_node must be in [1, 8], got 0`` -> ``-g/--ngpus: gpus_per_node must be ...``; a command
    maps library names to its flags with ``set_defaults(flags={"gpus_per_node": "ngpus"})``.
    """
    first = message.split(" ", 1)[0]
    options = _options(parser, args)
    dest = getattr(args, "flags", {}).get(first, first)
    flag = options.get(dest)
    return f"{flag}: {message}" if flag and not message.startswith("-") else message


def _show_input_warning(previous: Callable[..., None]) -> Callable[..., None]:
    """warnings.showwarning for a command: an ``InputWarning`` is one line ``warning: ...`` on stderr."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None, line: str | None = None) -> None:
        if issubclass(category, validate.InputWarning):
            print(f"warning: {one_line(message)}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)
    return show


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` with ``parser`` and call ``args.func(args)``; every failure of input is one line.

    Returns the exit status (0 on success, 2 on bad input, 130 on Ctrl-C) instead of exiting,
    so tests call ``main(argv)`` directly.
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else report(exc.code))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", validate.InputWarning)
            previous = warnings.showwarning
            warnings.showwarning = _show_input_warning(previous)
            try:
                status = args.func(args)
            finally:
                warnings.showwarning = previous
        sys.stdout.flush()
    except (ValueError, OverflowError) as exc:
        return report(_with_flag(one_line(exc), parser, args))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    return 0 if status is None else int(status)


def exit_with(main: Callable[[], int]) -> None:
    """``sys.exit(main())`` for ``if __name__ == "__main__"``; a closed pipe at exit stays quiet too."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        status = 0
    sys.exit(status)


def _nulls(obj: object) -> object:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _nulls(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nulls(v) for v in obj]
    return obj


def dumps(obj: object, **kwargs: object) -> str:
    """``json.dumps`` for a command's output: NaN and infinities become ``null`` (valid JSON, never ``NaN``)."""
    kwargs.setdefault("indent", 2)
    return json.dumps(_nulls(obj), allow_nan=False, **kwargs)

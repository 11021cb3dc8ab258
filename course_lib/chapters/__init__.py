"""Chapters: one module, or one package of a module per idea, per chapter: what the chapter computes and shows.

A chapter computes its rows, curves and frames and hands them to :mod:`course_lib.views`, which draws every
figure and formats every table; its explorers are built by :func:`course_lib.widgets.explorer` (one output:
the live widget, with a static view for exported HTML and GitHub). No chapter imports another chapter or a
``cli_*`` command (tests/test_layering.py). A chapter package re-exports its modules' names, so a notebook
reads ``pcie.generation_table()`` whichever module of ``chapters/pcie/`` holds it.
"""

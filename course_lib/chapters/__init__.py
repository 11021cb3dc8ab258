"""Chapters, one module (or package) per chapter: what the chapter computes and shows, and its live explorers.

Each explorer is built by :func:`course_lib.widgets.explorer` (one output: the live widget, with a
static view for exported HTML and GitHub); drawing lives in :mod:`course_lib.views` where a chapter's
views have been split out (see course_lib/views), so a view draws a model result and computes nothing.
"""

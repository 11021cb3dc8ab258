"""Views: every figure and table of the chapters, drawn on matplotlib Axes or formatted as HTML from a result
a chapter computed; a view computes no model number and never imports a chapter (tests/test_layering.py).

One module per chapter (``views/pcie.py`` draws what ``chapters/pcie`` computes), or per idea where a chapter's
drawing is large (``views/ring.py``: chapter 04's ring step-through; ``views/pipeline.py``: chapter 07's
schedules). Colours and axis helpers come from :mod:`course_lib.style`.
"""

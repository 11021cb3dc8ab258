"""Views: functions that draw a model's result on matplotlib Axes and compute nothing themselves.

One module per chapter explorer that needs one (``views/collectives.py`` draws what
``chapters/collectives.py`` computes). Colours and axis helpers come from :mod:`course_lib.style`.
"""

"""Repository-wide pytest setup (tests/conftest.py holds the library tests' hooks).

Every notebook that pytest executes (nbval over notebooks/ and solutions/) checks the numbers its
prose shows: each ``prose.Glue`` call raises when what it computes no longer prints as the stored text
(:mod:`course_lib.prose`). One execution per chapter serves both nbval and that check.
"""
import os

os.environ.setdefault("COURSE_PROSE_CHECK", "1")

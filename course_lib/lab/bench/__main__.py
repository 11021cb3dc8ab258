"""``python -m course_lib.lab.bench``: the bench's command line (:mod:`course_lib.lab.bench.cli`)."""
import sys

from .cli import main

sys.exit(main())

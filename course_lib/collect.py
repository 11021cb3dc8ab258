"""nbgrader's collect, copying only plain files: the course's ``nbgrader_config.py`` names it.

``nbgrader collect`` (and Formgrader's *Collect* button) copy each learner's latest submission from the
exchange's ``inbound/`` into ``submitted/``; nbgrader's own copy follows symbolic links (run as root, it
copied a link to the instructor's source notebooks, a root-only file or a classmate's notebook byte for byte).
Here each submission is copied by :func:`course_lib.submissions.copy_folder` (no link followed, no FIFO
opened, no file past the size limit read) and must be owned by the learner it names; a refused one is not
collected ("not graded: why", in nbgrader's log and in the chapter's grading record) and the class goes on.
"""
from __future__ import annotations

import os

from nbgrader.exchange.default.collect import ExchangeCollect

from . import submissions


class SafeCollect(ExchangeCollect):
    """nbgrader's collect with :func:`submissions.copy_folder` for its copy."""

    def do_copy(self, src, dest, log=None):
        student = os.path.basename(src).rsplit("+", 3)[0]
        try:
            owner = os.lstat(src).st_uid
            import pwd
            try:
                named = pwd.getpwnam(student).pw_uid
            except KeyError:
                named = None
            if named is not None and owner != named:
                raise submissions.Refused(f"the submission is owned by uid {owner}, not by {student}")
            submissions.copy_folder(src, dest)
        except submissions.Refused as exc:
            self.log.error("not graded: %s: %s", student, exc.why)
            _record_refusal(self.coursedir.root, self.coursedir.assignment_id, student, exc.why)


def _record_refusal(course_dir, assignment: str, student: str, why: str) -> None:
    """Write a refused submission into the chapter's grading record, so grades.csv says why."""
    from . import gradebook

    try:
        record = gradebook.read_record(course_dir, assignment)
    except (OSError, ValueError):
        return
    record.setdefault("failed", {})[student] = f"not graded: {why}"
    gradebook.write_record(course_dir, assignment, record)

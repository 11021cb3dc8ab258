"""Submissions are files, not links (issue 35): links, FIFOs, devices, hard links and oversized files are
refused with one line, never followed, never blocked on, never read into memory."""
import os
import stat
import time

import pytest

from course_lib import submissions


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "instructor" / "source.ipynb"
    path.parent.mkdir(mode=0o700)
    path.write_text('{"the": "answers"}')
    path.chmod(0o600)
    return path


def _submission(tmp_path, name="ana"):
    folder = tmp_path / "submitted" / name / "03_nvswitch"
    folder.mkdir(parents=True)
    return folder


def test_plain_files_are_read_and_copied(tmp_path):
    folder = _submission(tmp_path)
    (folder / "03_nvswitch.ipynb").write_text('{"cells": []}')
    (folder / "data").mkdir()
    (folder / "data" / "x.csv").write_text("1,2\n")
    submissions.check_folder(folder)
    assert submissions.read_file(folder / "03_nvswitch.ipynb") == b'{"cells": []}'
    submissions.copy_folder(folder, tmp_path / "copy")
    assert (tmp_path / "copy" / "data" / "x.csv").read_text() == "1,2\n"
    assert stat.S_IMODE((tmp_path / "copy" / "03_nvswitch.ipynb").stat().st_mode) == 0o600


@pytest.mark.parametrize("where", ["notebook", "folder", "submission"])
def test_a_symlink_anywhere_is_refused_not_followed(tmp_path, secret, where):
    folder = _submission(tmp_path)
    if where == "notebook":
        (folder / "03_nvswitch.ipynb").symlink_to(secret)
    elif where == "folder":
        (folder / "data").symlink_to(secret.parent, target_is_directory=True)
    else:
        folder.rmdir()
        folder.symlink_to(secret.parent, target_is_directory=True)
    with pytest.raises(submissions.Refused, match="symbolic link|cannot be opened"):
        submissions.copy_folder(folder, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()
    if where == "notebook":
        with pytest.raises(submissions.Refused, match="symbolic link"):
            submissions.read_file(folder / "03_nvswitch.ipynb")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    folder = _submission(tmp_path)
    os.mkfifo(folder / "03_nvswitch.ipynb")
    start = time.monotonic()
    with pytest.raises(submissions.Refused, match="FIFO"):
        submissions.check_folder(folder)
    with pytest.raises(submissions.Refused, match="FIFO"):
        submissions.read_file(folder / "03_nvswitch.ipynb")
    assert time.monotonic() - start < 5


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_refused(tmp_path):
    folder = _submission(tmp_path)
    os.mknod(folder / "03_nvswitch.ipynb", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero
    with pytest.raises(submissions.Refused, match="character device"):
        submissions.check_folder(folder)


def test_a_2_gb_sparse_file_is_refused_unread(tmp_path):
    folder = _submission(tmp_path)
    with open(folder / "03_nvswitch.ipynb", "wb") as handle:
        handle.truncate(2 * 1000 ** 3)
    with pytest.raises(submissions.Refused, match="2,000,000,000 bytes, over the"):
        submissions.check_folder(folder)
    with pytest.raises(submissions.Refused, match="over the"):
        submissions.read_file(folder / "03_nvswitch.ipynb")


def test_a_hard_link_to_another_file_is_refused(tmp_path):
    folder = _submission(tmp_path)
    other = tmp_path / "classmate.ipynb"
    other.write_text("{}")
    os.link(other, folder / "03_nvswitch.ipynb")
    with pytest.raises(submissions.Refused, match="hard link"):
        submissions.check_folder(folder)


def test_the_size_limit_is_read_from_the_environment(tmp_path, monkeypatch):
    folder = _submission(tmp_path)
    (folder / "a.ipynb").write_text("x" * 11)
    monkeypatch.setenv(submissions.LIMIT_ENV, "10")
    with pytest.raises(submissions.Refused, match="11 bytes, over the 10-byte limit"):
        submissions.check_folder(folder)
    monkeypatch.setenv(submissions.LIMIT_ENV, "ten")
    with pytest.raises(ValueError, match="COURSE_SUBMISSION_MAX_BYTES must be a whole number"):
        submissions.max_bytes()

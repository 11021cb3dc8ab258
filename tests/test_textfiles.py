"""course_lib.textfiles: the one reader of a learner's text file, and every command that reads one through it."""
import pytest

from course_lib import cli, cli_inspect, systemfile, textfiles


def test_reads_text_and_drops_a_byte_order_mark(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes("\ufeffGPU0 \u00b5s\n".encode("utf-8"))
    assert textfiles.read_text(f, 100) == "GPU0 \u00b5s\n"
    assert textfiles.read_text(str(f), len(f.read_bytes())) == "GPU0 \u00b5s\n"  # exactly the limit is read


@pytest.mark.parametrize("content, message", [
    (b"x" * 2049, r"^log '.*f.bin' is larger than 2 KiB, the most read; pass a log$"),
    (b"ok\0", r"^log '.*f.bin' is not a text file \(a zero byte at offset 2\); pass a log$"),
    (b"ok\xff", r"^log '.*f.bin' is not a text file \(byte 0xff at offset 2 is not UTF-8 text\); pass a log$"),
])
def test_refuses_big_and_binary_files_naming_the_file_and_what_to_pass(tmp_path, content, message):
    f = tmp_path / "f.bin"
    f.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        textfiles.read_text(f, 2048, "log", what="a log")


def test_missing_file_directory_and_odd_names_give_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"^file '.*nope' cannot be read \(No such file or directory\); pass a text"):
        textfiles.read_text(tmp_path / "nope", 10)
    with pytest.raises(ValueError, match=r"is a directory, not a regular file; pass a text file$"):
        textfiles.read_text(tmp_path, 10)
    with pytest.raises(ValueError) as info:
        textfiles.read_text(tmp_path / "two\nlines", 10)
    assert "\n" not in str(info.value) and "two\\nlines" in str(info.value)
    with pytest.raises(ValueError, match=r"max_bytes must be an integer >= 1"):
        textfiles.read_text(tmp_path / "nope", 0)


def test_every_reader_of_a_learners_file_is_the_one_reader(tmp_path, monkeypatch):
    """compare (cli.read_text), inspect and system files all go through textfiles.read_text."""
    assert cli.read_text is textfiles.read_text
    calls = []

    def spy(path, max_bytes, name="file", what="a text file"):
        calls.append((name, max_bytes))
        raise ValueError("stop")

    monkeypatch.setattr(textfiles, "read_text", spy)
    for read in (lambda: cli_inspect._read(str(tmp_path)), lambda: systemfile.load_system(tmp_path)):
        with pytest.raises(ValueError, match="stop"):
            read()
    assert calls == [("file", cli_inspect.MAX_FILE_BYTES), ("system file", systemfile.MAX_FILE_BYTES)]


def test_fifos_and_devices_are_refused_before_they_are_opened(tmp_path, monkeypatch):
    """A FIFO would block the reader until someone writes to it (forever), a device may never end:
    each is refused in one line, without being opened."""
    import builtins
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(path) or real_open(path, *a, **k))
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: opened.append(path) or io_open(path, *a, **k))
    for path, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device"),
                       ("/dev/null", "a character device")):
        with pytest.raises(ValueError) as info:
            textfiles.read_text(path, 10, "log", what="a log")
        assert str(info.value) == f"log {str(path)!r} is {kind}, not a regular file; pass a log"
    assert opened == []


io_open = open

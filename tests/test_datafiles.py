import pathlib

import pytest

from course_lib import datafiles

DATA = pathlib.Path(datafiles.__file__).parent / "data"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_every_data_file_loads_as_a_json_object(path):
    assert isinstance(datafiles.load(path.name), dict)


def test_a_missing_data_file_names_itself():
    with pytest.raises(FileNotFoundError, match="no_such_file.json"):
        datafiles.load("no_such_file.json")

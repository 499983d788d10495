"""tools/profile_scopes.py's interval union, which measures how much of the worker threads' busy time
the thunks fill: overlapping and nested intervals count once, gaps not at all."""

from conftest import load_tool


def _tool():
    return load_tool("profile_scopes")


def test_covered_counts_each_instant_once():
    covered = _tool().covered
    assert covered([]) == 0.0
    assert covered([(0, 10)]) == 10
    assert covered([(0, 10), (2, 3), (5, 12)]) == 12            # nested and overlapping: [0, 12]
    assert covered([(20, 25), (0, 10), (10, 11)]) == 16         # unsorted; touching ends join
    assert covered([(0, 1), (3, 4), (6, 8)]) == 4               # gaps are not counted

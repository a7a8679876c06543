"""Suites are counted before they are expanded: a grid of billions of cases is refused at once,
without making one; the limit is the suite's max_cases or the command line's --max-cases."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.jobs import suite as suite_module
from irtool.jobs.suite import SuiteError, load_suite


def _grid(tmp_path: Path, hidden: int, seeds: int, head: str = "") -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(f"[suite]\n{head}\n[[grid]]\nop = \"RNNCell\"\n"
                    f"attributes = {{ hidden_size = {list(range(1, hidden + 1))} }}\n"
                    f"sizes = {{ batch_size = {list(range(1, hidden + 1))} }}\nseeds = {list(range(seeds))}\n")
    return path


@pytest.fixture
def made(monkeypatch) -> list:
    """Every case the loader makes, counted."""
    calls: list = []
    real = suite_module._grid_case

    def counting(*args, **kwargs):
        calls.append(args[4:6])
        return real(*args, **kwargs)

    monkeypatch.setattr(suite_module, "_grid_case", counting)
    return calls


def test_a_huge_grid_is_refused_without_making_a_case(tmp_path, made):
    path = _grid(tmp_path, 2000, 2000)  # 2000 x 2000 x 2000 = 8e9 cases
    with pytest.raises(SuiteError, match=r"its grids make 8,000,000,000 cases, more than the limit of 50,000; make "
                                         r"the grids smaller, or raise the limit with max_cases"):
        load_suite(path)
    assert made == []


def test_expansion_makes_each_case_once(tmp_path, made):
    """Work grows with the number of cases, not faster: each is made exactly once."""
    for hidden, seeds in ((5, 2), (10, 2), (10, 4)):
        made.clear()
        cases = load_suite(_grid(tmp_path, hidden, seeds)).cases
        assert len(cases) == len(made) == hidden * hidden * seeds


def test_the_limit_is_the_suites_or_the_command_lines(tmp_path):
    assert len(load_suite(_grid(tmp_path, 10, 1, "max_cases = 100")).cases) == 100
    with pytest.raises(SuiteError, match="make 100 cases, more than the limit of 99"):
        load_suite(_grid(tmp_path, 10, 1, "max_cases = 99"))
    assert len(load_suite(_grid(tmp_path, 10, 1, "max_cases = 99"), max_cases=100).cases) == 100
    with pytest.raises(SuiteError, match=r"\[suite\] max_cases is 0; expected an integer >= 1"):
        load_suite(_grid(tmp_path, 2, 1, "max_cases = 0"))


def test_file_tables_count_too(tmp_path):
    (tmp_path / "ir").mkdir()
    for k in range(5):
        (tmp_path / "ir" / f"m{k}.xml").write_text("<net/>")
    path = tmp_path / "files.toml"
    path.write_text('[suite]\nmax_cases = 8\n[[files]]\npaths = ["ir/*.xml"]\nseeds = [0, 1]\n')
    with pytest.raises(SuiteError, match="more than the limit of 8 cases"):
        load_suite(path)

"""The commands of README.md, docs/reduce.md and docs/run.md run as written, as
tests/test_docs_commands.py runs every other page's (it holds how): a module of their own, so that
pytest-xdist runs these pages beside the others rather than after them on the same worker."""
from __future__ import annotations

import pytest
from test_docs_commands import WALKTHROUGHS, pages_with_commands, run_page


def test_every_walkthrough_is_a_page_that_shows_commands():
    assert sorted(page.name for page in pages_with_commands(True)) == sorted(WALKTHROUGHS)


@pytest.mark.parametrize("page", pages_with_commands(True), ids=lambda p: p.name)
def test_the_commands_of_a_page_run_as_written(page, tmp_path, openvino_cache):
    run_page(page, tmp_path, openvino_cache)

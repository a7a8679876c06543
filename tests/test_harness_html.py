"""report.html: the pass-rate table, failure details with plots, escaping, and a real browser."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from lxml import html as lxml_html

from conftest_harness import GPU_REASON, HOSTILE, STEPS, hostile_run, sample_run
from irtool.harness.html import render_html, step_plot, write_html

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


@pytest.fixture(scope="module")
def report() -> str:
    return render_html(sample_run())


@pytest.fixture(scope="module")
def page(report):
    return lxml_html.fromstring(report)


def _pass_rates(page) -> dict[tuple[str, str], str]:
    (table,) = page.xpath("//table[@class='passrate']")
    head = [_text(th) for th in table.xpath("thead/tr/th")]
    return {(_text(row[0]), column): _text(cell) for row in table.xpath("tbody/tr")
            for column, cell in zip(head[1:], row[1:])}


@pytest.mark.parametrize("op, column, cell", [
    ("GRUSequence-5", "CPU f32", "3/4 75%"),  # the IR file of one GRU counts under the op
    ("GRUSequence-5", "CPU bf16", "1/2 50% 1 xfail"),
    ("GRUSequence-5", "GPU f32", "2 skipped"),
    ("GRUSequence-5", "GPU bf16", "-"),
    ("LSTMSequence-5", "CPU f32", "1/4 25%"),  # error, crash and timeout count against it
    ("LSTMSequence-5", "CPU bf16", "1/1 100%"),  # xpass passes
    ("LSTMSequence-5", "GPU f32", "1 skipped"),
    ("(not one RNN op)", "CPU f32", "1/1 100%"),  # unjudged passes
    ("all ops", "CPU f32", "5/9 55.5%"),
    ("all ops", "CPU bf16", "2/3 66.6% 1 xfail"),
])
def test_pass_rate_cells(page, op, column, cell):
    assert _pass_rates(page)[(op, column)] == cell


def test_pass_rate_rows_and_colours(page):
    rows = [key[0] for key in _pass_rates(page) if key[1] == "CPU f32"]
    assert rows == ["GRUSequence-5", "LSTMSequence-5", "(not one RNN op)", "all ops"]
    colours = {_text(td): td.get("style") for td in page.xpath("//table[@class='passrate']//td[@class='rate']")}
    assert colours["1/1 100%"] == "background:hsl(120,65%,80%)" and colours["1/4 25%"] == "background:hsl(2,65%,80%)"


def test_summary_counts(page):
    (table,) = page.xpath("//table[@class='summary']")
    counts = {_text(row[0]): _text(row[1]) for row in table.xpath("tbody/tr")}
    assert counts == {"PASS": "5", "FAIL": "1", "UNJUDGED": "1", "ERROR": "1", "CRASH": "1", "TIMEOUT": "1",
                      "SKIP": "3", "XFAIL": "1", "XPASS": "1", "total": "15"}


def test_every_problem_has_a_section_in_verdict_order(page):
    titles = [_text(h3) for h3 in page.xpath("//section[@class='problem']/h3")]
    assert titles == ["FAIL gru-fail on CPU at f32", "ERROR lstm-error on CPU at f32",
                      "CRASH lstm-crash on CPU at f32", "TIMEOUT lstm-hang on CPU at f32"]


def test_failure_details(page):
    section = page.xpath("//section[@class='problem']")[0]
    (outputs,) = section.xpath(".//table[@class='outputs']")
    head = [_text(th) for th in outputs.xpath("thead/tr/th")]
    first = dict(zip(head, (_text(td) for td in outputs.xpath("tbody/tr[1]/td"))))
    assert first["output"] == "Y" and first["max abs"] == "0.05" and first["outside"] == "3/64 (4.7%)"
    assert first["worst at"] == "[0, 0, 3, 1]" and first["needed atol"] == "0.05"
    assert section.xpath(".//a[@class='reproducer']/@href") == ["reproducers/gru-fail-CPU-f32/"]


def test_one_plot_per_output_with_steps(page):
    (svg,) = page.xpath("//section[@class='problem'][1]//svg")  # Y has steps, Ho has none
    (points,) = svg.xpath(".//polyline/@points")
    assert len(points.split()) == len(STEPS)
    assert "log scale" in _text(svg) and svg.xpath(".//line[@class='atol']")


def test_crash_shows_stderr_tail(page):
    (pre,) = page.xpath("//section[@class='problem'][3]//pre[@class='stderr']")
    assert pre.text_content() == "terminate called\nAborted \ufffd\ufffd[0m"


def test_known_failures_and_skips_are_listed_with_reasons(page):
    assert [_text(td) for td in page.xpath("//table[@class='xpass']/tbody/tr/td")] == [
        "lstm-a on CPU at bf16", "lstm bf16 known bad", "BUG-7"]
    assert page.xpath("//table[@class='xfail']//a/@href") == ["https://example.com/issues/1"]
    (row,) = page.xpath("//table[@class='skipped']/tbody/tr")
    assert [_text(td) for td in row[:2]] == [GPU_REASON, "3"]


@pytest.mark.parametrize("partial", [False, True])
def test_partial_run_warning(partial):
    run = sample_run()
    run.partial = partial
    page = lxml_html.fromstring(render_html(run))
    assert bool(page.xpath("//p[@class='warning']")) == partial


def test_self_contained(report, page):
    assert not page.xpath("//script | //link | //img | //iframe | //*[@src]")
    assert not re.search(r"url\(|@import", report)


def test_hostile_text_is_escaped():
    report = render_html(hostile_run())
    page = lxml_html.fromstring(report)
    assert "<script" not in report and not page.xpath("//script")
    assert HOSTILE in _text(page.xpath("//h3")[0]) and HOSTILE in _text(page.xpath("//table[@class='outputs']")[0])
    hrefs = page.xpath("//a/@href")
    assert len(hrefs) == 1 and ":" not in hrefs[0]  # the reproducer, made a relative path; the issue is no link


@pytest.mark.parametrize("values, atol, scale", [
    ((1e-7, 3e-6, 2e-4, 5e-2), 1e-5, "log"),
    ((0.1, 0.2, 0.15), 0.15, "linear"),
    ((0.0, 1e-8, float("inf"), 1e-3), 1e-5, "log"),  # 0 on the bottom edge, inf on the top
    ((0.3,), None, "linear"),
])
def test_step_plot(values, atol, scale):
    svg = lxml_html.fragment_fromstring(step_plot("Y", values, atol))
    points = [tuple(map(float, p.split(","))) for p in svg.xpath(".//polyline/@points")[0].split()]
    assert len(points) == len(values) and f"{scale} scale" in _text(svg)
    frame = svg.xpath(".//rect")[0]
    top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
    assert all(top <= y <= bottom for _, y in points)
    assert bool(svg.xpath(".//line[@class='atol']")) == (atol is not None)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here: apt-get install chromium to check report.html "
                                             "in a real browser")
def test_chromium_renders_the_report(tmp_path):
    path = tmp_path / "report.html"
    write_html(path, sample_run())
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = lxml_html.fromstring(done.stdout)
    assert _pass_rates(dom)[("GRUSequence-5", "CPU f32")] == "3/4 75%"
    assert len(dom.xpath("//svg//polyline/@points")[0].split()) == len(STEPS)

"""report.html: the pass-rate table, failure details with plots, escaping, and a real browser."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from conftest_harness import GPU_REASON, HOSTILE, STEPS, hostile_run, result, sample_run
from lxml import html as lxml_html

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
    ("(not one RNN op)", "CPU f32", "1 unjudged"),  # nothing compared: apart, never a pass
    ("all ops", "CPU f32", "4/8 50% 1 unjudged"),
    ("all ops", "CPU bf16", "2/3 66.6% 1 xfail"),
])
def test_pass_rate_cells(page, op, column, cell):
    assert _pass_rates(page)[(op, column)] == cell


def test_pass_rate_rows_and_colours(page):
    rows = [key[0] for key in _pass_rates(page) if key[1] == "CPU f32"]
    assert rows == ["GRUSequence-5", "LSTMSequence-5", "(not one RNN op)", "all ops"]
    colours = {_text(td): td.get("style") for td in page.xpath("//table[@class='passrate']//td[@class='rate']")}
    assert colours["1/1 100%"] == "background:hsl(120,50%,78%)" and colours["1/4 25%"] == "background:hsl(10,85%,80%)"


def test_a_cell_short_of_100_percent_is_never_green():
    """96% must not look like 100%: green is for all passed, anything less is red to amber."""
    run = sample_run()
    run.results = [result(f"gru-{k}", "pass" if k else "fail") for k in range(25)]
    page = lxml_html.fromstring(render_html(run))
    (cell,) = page.xpath("//table[@class='passrate']//tr[1]/td[@class='rate']")
    hue = int(re.search(r"hsl\((\d+),", cell.get("style"))[1])
    assert _text(cell).startswith("24/25 96%") and hue <= 40


def test_a_skipped_ir_file_counts_under_the_op_it_ran_as_elsewhere():
    run = sample_run()
    run.results.append(result("ir/gru.xml", "skip", device="GPU", op=None, file="samples/ir/valid/gru.xml",
                              message=GPU_REASON))
    page = lxml_html.fromstring(render_html(run))
    rates = _pass_rates(page)
    assert rates[("GRUSequence-5", "GPU f32")] == "3 skipped" and rates[("(not one RNN op)", "GPU f32")] == "-"


def test_summary_counts(page):
    (table,) = page.xpath("//table[@class='summary']")
    counts = {_text(row[0]): _text(row[1]) for row in table.xpath("tbody/tr")}
    assert counts == {"PASS": "5", "FAIL": "1", "UNJUDGED": "1", "ERROR": "1", "CRASH": "1", "TIMEOUT": "1",
                      "SKIP": "3", "XFAIL": "1", "XPASS": "1", "total": "15", "jobs": "15"}
    assert [_text(th) for th in table.xpath("thead/tr/th")] == ["verdict", "results"]


def test_a_models_results_are_counted_apart_from_its_jobs():
    """A model's job has a result per node and per judgment of its outputs: 3 results of 1 job."""
    from irtool.harness.store import RunResults

    run = RunResults({}, [result(f"m[seed=0]::{name}", "pass", node=name) for name in ("a", "b", "outputs")])
    (table,) = lxml_html.fromstring(render_html(run)).xpath("//table[@class='summary']")
    counts = {_text(row[0]): _text(row[1]) for row in table.xpath("tbody/tr")}
    assert counts == {"PASS": "3", "total": "3", "jobs": "1"}


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
    assert "max abs error (log scale)" in _text(svg) and svg.xpath(".//line[@class='atol']")


def test_crash_shows_stderr_tail(page):
    (pre,) = page.xpath("//section[@class='problem'][3]//pre[@class='stderr']")
    assert pre.text_content() == "terminate called\nAborted \ufffd\ufffd[0m"


def test_known_failures_and_skips_are_listed_with_reasons(page):
    assert [_text(td) for td in page.xpath("//table[@class='by-reason xpass']/tbody/tr/td")] == [
        "lstm bf16 known bad", "BUG-7", "1", "jobs lstm-a on CPU at bf16"]
    assert page.xpath("//table[@class='by-reason xfail']//a/@href") == ["https://example.com/issues/1"]
    (row,) = page.xpath("//table[@class='by-reason skip']/tbody/tr")
    assert [_text(td) for td in row[:2]] == [GPU_REASON, "3"]  # no issue column when no job has one


def test_known_failures_are_grouped_by_reason_as_skips_are():
    run = sample_run()
    run.results += [result(f"gru-x{k}", "xfail", precision="bf16", message="bf16 drift",
                           issue="https://example.com/issues/1") for k in range(5)]
    page = lxml_html.fromstring(render_html(run))
    (row,) = page.xpath("//table[@class='by-reason xfail']/tbody/tr")
    assert [_text(td) for td in row[:3]] == ["bf16 drift", "https://example.com/issues/1", "6"]
    assert page.text_content().count("bf16 drift") == 1


def test_known_failures_of_one_entry_are_one_row_whatever_numbers_their_messages_hold():
    """The known-failures entry applied at report time: 28 cases of one bug, each message with its own
    numbers, are one row with a count, each job listed with what it found."""
    from irtool.harness.expectations import Expected, apply

    entry = Expected(case="gru-len*", reason="CPU ignores sequence_lengths", issue="BUG-9")
    run = sample_run()
    run.results += [apply([entry], result(f"gru-len{k}", "fail", message=f"outside tolerance: Y (max abs 0.{k}1)"))
                    for k in range(28)]
    page = lxml_html.fromstring(render_html(run))
    rows = page.xpath("//table[@class='by-reason xfail']/tbody/tr")
    [row] = [row for row in rows if _text(row[0]) == "CPU ignores sequence_lengths"]
    assert [_text(td) for td in row[1:3]] == ["BUG-9", "28"]
    assert "gru-len7 on CPU at f32: fail: outside tolerance: Y (max abs 0.71)" in _text(row[3])


def test_a_crash_shows_how_long_it_ran_not_zero():
    run = sample_run()
    crash = next(r for r in run.results if r.verdict == "crash")
    crash.time = 2.5
    hang = next(r for r in run.results if r.verdict == "timeout")
    hang.time = 0.0  # not known (stored by an older irtool)
    page = lxml_html.fromstring(render_html(run))
    rows = ".//table[@class='facts']/tbody/tr"
    facts = {_text(h3): {_text(tr[0]): _text(tr[1]) for tr in h3.getparent().xpath(rows)}
             for h3 in page.xpath("//section[@class='problem']/h3")}
    assert facts["CRASH lstm-crash on CPU at f32"]["time"] == "2.500 s until it crashed"
    assert facts["TIMEOUT lstm-hang on CPU at f32"]["time"] == "-"
    assert facts["FAIL gru-fail on CPU at f32"]["time"].startswith("0.250 s (compile ")


@pytest.mark.parametrize("actual, expected, shown", [
    (0.28037649393081665, 0.28037652373313904, ("0.2803765", "0.28037652")),  # f32 neighbours
    (0.1, 0.2, ("0.1", "0.2")),
    (0.3, 0.30000000000000004, ("0.3", "0.30000000000000004")),  # f64 neighbours: 17
    (-0.5726416, 0.0, ("-0.5726416", "0")),
    (float("nan"), 1.0, ("nan", "1")),
])
def test_failing_values_are_printed_with_the_digits_that_differ(actual, expected, shown):
    run = sample_run()
    failing = next(r for r in run.results if r.verdict == "fail")
    failing.outputs[0].update(worst_actual=actual, worst_expected=expected)
    page = lxml_html.fromstring(render_html(run))
    (outputs,) = page.xpath("//section[@class='problem'][1]//table[@class='outputs']")
    head = [_text(th) for th in outputs.xpath("thead/tr/th")]
    first = dict(zip(head, (_text(td) for td in outputs.xpath("tbody/tr[1]/td"))))
    assert (first["actual"], first["expected"]) == shown


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
    assert len(points) == len(values)
    assert [_text(label) for label in svg.xpath(".//text[@class='y-label']")] == [f"max abs error ({scale} scale)"]
    assert _text(svg).count("max abs error") == 2  # the y axis label, and the tooltip of the whole plot
    frame = svg.xpath(".//rect")[0]
    top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
    assert all(top <= y <= bottom for _, y in points)
    assert bool(svg.xpath(".//line[@class='atol']")) == (atol is not None)



@pytest.mark.parametrize("values, atol, ticks", [
    ((1.7e308, 1e-3), 1e-5, ("1e+309", "1e-05")),  # the decade above the largest float is no float
    ((5e-324, 1e-3), 1e-5, ("0.001", "1e-324")),  # nor the one below the smallest
    ((1.7e308, 5e-324), 1.7e308, ("1e+309", "1e-324")),
    ((1.7e308, 1.7e308), None, ("1.7e+308", "0")),  # linear: its top is the value, not inf
    ((5e-324, 5e-324), None, ("4.9e-324", "0")),  # 5e-324 * 1.1 rounds back to 5e-324
])
def test_step_plot_of_the_extreme_floats(values, atol, ticks):
    """Per-step errors at the ends of the float range plot inside the frame with finite labels."""
    svg = lxml_html.fragment_fromstring(step_plot("Y", values, atol))
    points = [tuple(map(float, p.split(","))) for p in svg.xpath(".//polyline/@points")[0].split()]
    frame = svg.xpath(".//rect")[0]
    top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
    assert all(top <= y <= bottom for _, y in points)
    assert tuple(_text(t) for t in svg.xpath(".//text[@class='y-tick']")) == ticks
    assert "inf" not in _text(svg) and "nan" not in _text(svg)

# Measures report.html as the browser laid it out: the contrast of every table cell's text on
# its effective background (WCAG ratio), the rate cells' colours, and, for every step plot, its
# y-axis labels and whether any two of its texts overlap or leave the plot.
PROBE = """
<script>
function rgb(text) { const v = text.match(/[\\d.]+/g).map(Number); return v.length > 3 && v[3] === 0 ? null : v.slice(0, 3); }
function background(el) { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c) return c; } return [255, 255, 255]; }
function lum(c) { const l = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
                  return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; }
function contrast(a, b) { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); }
function overlap(a, b) { return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height; }
const cells = [...document.querySelectorAll("td, th")].filter(td => td.textContent.trim() && !td.querySelector(".verdict"))
  .map(td => ({table: td.closest("table").className, text: td.textContent.trim().slice(0, 40),
               contrast: contrast(rgb(getComputedStyle(td).color), background(td))}));
const rates = [...document.querySelectorAll("table.passrate td.rate")].map(td => ({text: td.textContent, bg: background(td)}));
const plots = [...document.querySelectorAll("svg.steps")].map(svg => {
  const frame = svg.getBoundingClientRect();  // as laid out: a rotated label's box is its rotated box
  const texts = [...svg.querySelectorAll(":scope > text")].map(t => { const r = t.getBoundingClientRect();
    return {t: t.textContent, b: {x: r.x - frame.x, y: r.y - frame.y, width: r.width, height: r.height}}; });
  return {yLabels: svg.querySelectorAll("text.y-label").length,
          overlaps: texts.flatMap((a, i) => texts.slice(i + 1).filter(b => overlap(a.b, b.b)).map(b => a.t + " / " + b.t)),
          outside: texts.filter(({b}) => b.x < 0 || b.y < 0 || b.x + b.width > frame.width || b.y + b.height > frame.height).map(t => t.t)};
});
const out = document.createElement("pre"); out.id = "probe";
out.textContent = JSON.stringify({cells, rates, plots}); document.body.appendChild(out);
</script>
"""


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _browser_run():
    """Failures with step plots, known failures (several for one reason), xpass, skips, a 96% cell."""
    run = sample_run()
    run.results += [result(f"gru-x{k}", "xfail", precision="bf16", max_abs=4e-2, message="bf16 drift " * 20,
                           issue="https://example.com/issues/1") for k in range(4)]
    run.results += [result(f"rnn-{k}", "pass" if k else "fail", op="RNNSequence-5", max_abs=1e-7,
                           message="Y outside tolerance" * (not k)) for k in range(25)]
    return run


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here: apt-get install chromium to check report.html "
                                             "in a real browser")
def test_report_in_a_real_browser_is_readable(tmp_path):
    path = tmp_path / "report.html"
    write_html(path, _browser_run())
    shot = tmp_path / "report.png"
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    done = subprocess.run(flags + ["--window-size=1200,3600", f"--screenshot={shot}", path.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert _png_size(shot.read_bytes()) == (1200, 3600) and shot.stat().st_size > 50_000  # a page, not a blank
    probe = tmp_path / "probe.html"
    probe.write_text(path.read_text().replace("</body>", PROBE + "</body>"))
    done = subprocess.run(flags + ["--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (pre,) = lxml_html.fromstring(done.stdout).xpath("//pre[@id='probe']")
    found = json.loads(pre.text_content())
    unreadable = [cell for cell in found["cells"] if cell["contrast"] < 4.5]
    assert not unreadable, unreadable  # the known-failures table was dark grey under dark text
    assert any(cell["table"] == "by-reason xfail" for cell in found["cells"])
    for cell in found["rates"]:  # green only at 100%
        red, green, blue = cell["bg"]
        if "%" in cell["text"]:
            assert (green > red + 20) == ("100%" in cell["text"]), cell
    assert any("96%" in cell["text"] for cell in found["rates"])
    assert found["plots"] and all(p["yLabels"] == 1 and not p["overlaps"] and not p["outside"]
                                  for p in found["plots"]), found["plots"]


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


def test_a_run_of_hostile_size_keeps_the_page_bounded():
    """400 failures over 300 ops on 60 devices, and 500 jobs skipped for one reason: the page details
    the first 300 failures and counts the rest, keeps the pass-rate table to 100 ops (+ other, + all)
    and 48 columns (+ other), and names 200 skipped jobs."""
    from irtool.harness.html import LISTED_NAMES, LISTED_PROBLEMS, RATE_COLUMNS, RATE_ROWS
    from irtool.harness.store import RunResults

    results = [result(f"c{k}", "fail", device=f"DEV{k % 60}", op=f"Op{k % 300}-1", max_abs=0.5, message="bad")
               for k in range(400)]
    results += [result(f"s{k}", "skip", message=GPU_REASON) for k in range(500)]
    page = lxml_html.fromstring(render_html(RunResults({"devices": ["CPU"], "precisions": ["f32"]}, results)))
    assert len(page.xpath("//section[@class='problem']")) == LISTED_PROBLEMS
    assert _text(page.xpath("//p[@class='more']")[0]).startswith("... and 100 more fail not detailed here")
    (table,) = page.xpath("//table[@class='passrate']")
    rows = [_text(row[0]) for row in table.xpath("tbody/tr")]
    assert len(rows) == RATE_ROWS + 2 and rows[-2:] == ["(201 other ops)", "all ops"]  # 300 + GRU of the skips
    head = [_text(th) for th in table.xpath("thead/tr/th")]
    assert len(head) == 1 + RATE_COLUMNS + 1 and head[-1] == "(13 other columns)"  # CPU f32 asked + 60 found
    assert _text(table.xpath("tbody/tr")[-1][-1]) == "0/78 0%"  # DEV47..DEV59: 13 devices of 6 failures each
    (skips,) = page.xpath("//table[@class='by-reason skip']//details")
    assert len(skips.xpath("br")) == LISTED_NAMES and _text(skips).endswith("... and 300 more")


def _overall(run, **kwargs) -> str:
    return lxml_html.fromstring(render_html(run, **kwargs)).xpath("//p[@class='overall']")[0].text_content()


def test_the_overall_verdict_is_at_the_top_with_what_failed(page):
    [first] = page.xpath("//h1/following::p[@class='overall']")
    assert first.text_content() == "Verdict: FAILED: 1 fail, 1 error, 1 crash, 1 timeout"
    # in a banner of its colour, counting failures (fail, error), regressions and crashes (crash, timeout)
    [banner] = page.xpath("//div[contains(@class, 'banner')]")
    assert banner.get("class") == "banner failed" and first.getparent() is banner
    assert [_text(span) for span in banner.xpath(".//span[contains(@class, 'count')]")] == [
        "2 failures", "0 regressions", "2 crashes"]
    assert page.xpath("//p[@class='overall']/following::h2")[0].text == "Summary"


def test_the_overall_verdict_names_missing_coverage_and_a_run_that_judged_nothing():
    from irtool.harness.store import RunResults

    passed = RunResults({}, [result("gru-a", "pass", max_abs=1e-7)])
    assert _overall(passed) == "Verdict: PASSED"
    assert _overall(passed, coverage_missing=["no job of LSTMSequence ran as RNNSeq"]) == (
        "Verdict: FAILED: 1 expected implementation not reached; no job of LSTMSequence ran as RNNSeq")
    assert _overall(RunResults({}, [result("gru-a", "skip")])) == "Verdict: ALL SKIPPED"


def test_the_overall_verdict_counts_failures_and_regressions_alike():
    """A run with real failures that also drifted against its baseline: both are said (it said only
    ``FAILED: 1 accuracy drift against the baseline`` while the console named the failures)."""
    from irtool.harness.baseline import diff_runs
    from irtool.harness.reports import BaselineDiff
    from irtool.harness.store import RunResults

    old = RunResults({}, [result("gru-a", "pass", max_abs=1e-7), result("gru-b", "pass", max_abs=1e-7),
                          result("gru-c", "fail", max_abs=0.5)])
    new = RunResults({}, [result("gru-a", "pass", max_abs=9e-6), result("gru-b", "fail", max_abs=0.5),
                          result("gru-c", "fail", max_abs=0.5)])
    baseline = BaselineDiff("old", diff_runs(old, new))
    assert _overall(new, baseline=baseline) == (
        "Verdict: FAILED: 2 fail; 1 new failures, 1 accuracy drift against the baseline")
    banner = lxml_html.fromstring(render_html(new, baseline=baseline)).xpath("//div[@class='banner failed']")[0]
    assert "2 regressions" in banner.text_content()

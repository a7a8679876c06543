"""The criterion of ``irtool reduce``: the default (the original's kind of failure), the --check
parser and its error messages, and check scripts."""
from __future__ import annotations

import pytest
from conftest_harness import output, result

from irtool.reduce import ReduceError
from irtool.reduce.check_script import load_check_script
from irtool.reduce.criterion import SameFailure, check_outputs, failure_kind, parse_check

MISMATCH = result("a", "fail", max_abs=0.5, outputs=[output("Y", 0.5, outside=3), output("Ho", 1e-7)])
SMALL = result("a", "fail", max_abs=1e-4, outputs=[output("Y", 1e-4, outside=1), output("Ho", 2e-4, outside=1)])
NAN = result("a", "fail", max_abs=0.0, outputs=[output("Y", 0.0, outside=1, nonfinite_mismatch=1)])
SHAPE = result("a", "fail", outputs=[output("Y", outside=1, passed=False, problem="shape [1] differs")])
PASSED = result("a", "pass", max_abs=1e-7)
CRASH = result("a", "crash", message="the worker died: SIGABRT (abort)")
SEGV = result("a", "crash", message="the worker died: SIGSEGV (segmentation fault)")


@pytest.mark.parametrize("case, kind", [
    (MISMATCH, "mismatch beyond tolerance"), (NAN, "NaN/Inf mismatch"), (SHAPE, "wrong output shape"),
    (CRASH, "crash: the worker died: SIGABRT (abort)"), (result("a", "timeout"), "timeout"),
    (result("a", "error", message="CPU cannot compile model.xml: dim 12 of 4.5"),
     "error: CPU cannot compile model.xml: dim # of #"),
    (PASSED, None), (result("a", "skip"), None), (result("a", "xfail"), None)])
def test_failure_kinds(case, kind):
    assert failure_kind(case) == kind


def test_the_default_keeps_the_same_kind_and_says_the_tolerance():
    same = SameFailure.of(MISMATCH)
    assert same.holds(SMALL) and not same.holds(NAN) and not same.holds(PASSED) and not same.holds(CRASH)
    assert same.text == ("fails as the original does: mismatch beyond tolerance, with Y atol 1e-05 rtol 0.0001 "
                         "(f32 default); Ho atol 1e-05 rtol 0.0001 (f32 default)")
    crash = SameFailure.of(CRASH)
    assert crash.holds(CRASH) and not crash.holds(SEGV)
    error = SameFailure.of(result("a", "error", message="cannot compile: hidden 64"))
    assert error.holds(result("a", "error", message="cannot compile: hidden 1"))
    assert not error.holds(result("a", "error", message="inference on CPU failed: hidden 1"))


CASES = {"mismatch": MISMATCH, "small": SMALL, "nan": NAN, "shape": SHAPE, "passed": PASSED, "crash": CRASH,
         "segv": SEGV}


@pytest.mark.parametrize("text, holds", [
    ("max_abs>0.1", "mismatch"),
    ("max_abs > 1e-5", "mismatch small"),
    ("Ho.max_abs>=2e-4", "small"),
    ("Y.outside==1", "small nan shape"),
    ("nonfinite_mismatch>0", "nan"),
    ("verdict==crash", "crash segv"),
    ("verdict!=fail", "passed crash segv"),
    ("verdict==fail and max_abs<1e-3", "small nan shape"),  # the largest over the outputs
    ("verdict==crash or Y.max_abs>0.1 and Ho.max_abs<1e-6", "mismatch crash segv"),
    ("max_abs<1", "mismatch small nan shape passed"),
])
def test_check_expressions(text, holds):
    check = parse_check(text)
    assert [name for name, case in CASES.items() if check.holds(case)] == holds.split()
    assert check.text == f"--check {text}"


@pytest.mark.parametrize("text, says", [
    ("max_abs>>0.1", "'max_abs>>0.1' is not METRIC OP VALUE or OUTPUT.METRIC OP VALUE (OP one of >= <= == != > <)"),
    ("max_abs", "is not METRIC OP VALUE"),
    ("maxabs>0.1", "unknown metric 'maxabs'; metrics are verdict, max_abs, max_rel"),
    ("max_abs>big", "'big' after max_abs> is not a number"),
    ("verdict>fail", "write verdict==VERDICT or verdict!=VERDICT"),
    ("verdict==broken", "VERDICT one of pass, fail, unjudged, error, crash, timeout"),
    ("max_abs>0.1 and", "is not METRIC OP VALUE"),
    ("__import__('os').system('x')==1", "is not METRIC OP VALUE"),
    ("", "an empty comparison"),
])
def test_check_errors_say_what_is_wrong(text, says):
    with pytest.raises(ReduceError) as caught:
        parse_check(text)
    assert caught.value.message.startswith(f"--check {text!r}: ")
    assert says in caught.value.message
    assert "\n" not in caught.value.message


def test_a_check_naming_an_output_the_case_lacks_is_refused():
    with pytest.raises(ReduceError, match="the case has no output Co; its outputs are Ho, Y"):
        check_outputs(parse_check("Co.max_abs>0"), MISMATCH)
    check_outputs(parse_check("Ho.max_abs>0"), MISMATCH)


def test_a_check_script_is_called_with_the_stored_result(tmp_path):
    script = tmp_path / "check.py"
    script.write_text("def check(result):\n"
                      "    return result['verdict'] == 'fail' and result['outputs'][0]['max_abs'] > 0.1\n")
    check = load_check_script(script)
    assert [check.holds(case) for case in (MISMATCH, SMALL, PASSED)] == [True, False, False]
    assert check.text == f"--check-script {script}: check(result) is true"


@pytest.mark.parametrize("source, says", [
    (None, "no such check script"),
    ("x = 1\n", "defines no function check(result: dict) -> bool"),
    ("import not_a_module_anywhere\n", "importing it raised ModuleNotFoundError"),
    ("def check(result):\n    return result['nope']\n", "check() raised KeyError: 'nope'"),
])
def test_check_script_errors(tmp_path, source, says):
    script = tmp_path / "check.py"
    if source is not None:
        script.write_text(source)
    with pytest.raises(ReduceError) as caught:
        load_check_script(script).holds(MISMATCH)
    assert caught.value.message.startswith(str(script)) and says in caught.value.message

"""The matrix: jobs grouped by model, deterministic shards, skips with reasons; known failures; faults."""
from __future__ import annotations

import pytest

from irtool.harness import expectations
from irtool.harness.matrix import MatrixError, check_precisions, make_jobs, parse_list, parse_shard
from irtool.jobs.faults import FaultError, parse_faults
from irtool.jobs.records import FAIL, PASS, SKIP, XFAIL, XPASS, CaseResult, Job, SuiteCase
from irtool.runtime.devices import list_devices, skip_reason

CASES = [SuiteCase(f"c{k}[seed={s}]", "t", op="RNNCell", version=0, attributes={"hidden_size": k + 1}, seed=s)
         for k in range(3) for s in range(2)]


def test_jobs_keep_one_models_seeds_devices_and_precisions_together():
    jobs = make_jobs(CASES, ["CPU", "AUTO:CPU"], ["f32", "bf16"])
    assert len(jobs) == len(CASES) * 4
    first_model = [job for job in jobs[:8]]
    assert {job.case.model_key for job in first_model} == {CASES[0].model_key}
    assert [(j.device, j.precision, j.case.seed) for j in jobs[:4]] == [
        ("CPU", "f32", 0), ("CPU", "f32", 1), ("CPU", "bf16", 0), ("CPU", "bf16", 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 30])
def test_shards_are_disjoint_cover_the_matrix_and_are_balanced(count):
    every = make_jobs(CASES, ["CPU", "AUTO:CPU"], ["f32", "bf16"])
    shards = [make_jobs(CASES, ["CPU", "AUTO:CPU"], ["f32", "bf16"], parse_shard(f"{k}/{count}"))
              for k in range(1, count + 1)]
    keys = [job.key for shard in shards for job in shard]
    assert sorted(keys) == sorted(job.key for job in every) and len(set(keys)) == len(keys)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shards(text):
    with pytest.raises(MatrixError, match="expected K/N"):
        parse_shard(text)


def test_precision_lists():
    assert parse_list("f32, bf16,f32", "--precision") == ["f32", "bf16"]
    with pytest.raises(MatrixError, match="--precision f8"):
        check_precisions(["f32", "f8"])


@pytest.fixture(scope="module")
def devices():
    return list_devices()


@pytest.mark.parametrize("device, precision, reason", [
    ("CPU", "f32", None), ("CPU", "bf16", "bf16"), ("AUTO:CPU", "bf16", "bf16"), ("HETERO:CPU", "f32", None),
    ("GPU", "f32", r"GPU is not available here: .*(OpenCL|device)"),
    ("HETERO:GPU,CPU", "f32", r"GPU is not available here: "),
    ("NPU.3", "f32", "npu"),
    ("CPU", "f16", "f16"),
    ("CPU", "default", None), ("AUTO:CPU", "default", None),  # the device's own choice: never lacking
    ("GPU", "default", r"GPU is not available here: "),
])
def test_skip_reasons(devices, device, precision, reason, cpu_precisions):
    """"bf16", "f16": none where the CPU lists the precision (AVX512_BF16 or AMX; AVX512_FP16, AMX-FP16
    or ARM), else the reason a CPU without it is skipped; "npu": a fourth NPU is absent with the
    reason OpenVINO gives for NPU (or, where NPUs are, as unknown)."""
    import re

    if reason in ("bf16", "f16"):
        reason = None if reason in cpu_precisions else rf"CPU does not support {reason} \(its precisions: .*f32"
    if reason == "npu":
        why = next((absent.reason for absent in devices.absent if absent.name == "NPU"), "not known to OpenVINO")
        reason = re.escape(f"NPU.3 is not available here: {why}") + "$"
    found = skip_reason(device, precision, devices)
    if reason is None:
        assert found is None
    else:
        assert found is not None and __import__("re").match(reason, found), found


def result(verdict: str, case: str = "gru[a=1,seed=0]", device: str = "CPU") -> CaseResult:
    return CaseResult(case, "t", device, "f32", verdict, message="outside tolerance")


@pytest.mark.parametrize("verdict, device, expected", [
    (FAIL, "CPU", XFAIL), ("crash", "CPU", "crash"), (PASS, "CPU", XPASS), (SKIP, "CPU", SKIP), (FAIL, "GPU", FAIL)])
def test_known_failures_become_xfail_and_a_pass_among_them_xpass(tmp_path, verdict, device, expected):
    """An entry is a known wrong result (fail) unless it says otherwise: a crash of that case is a crash."""
    path = tmp_path / "xfail.toml"
    path.write_text('[[xfail]]\ncase = "gru[*]"\ndevice = "CPU"\nreason = "bug 1"\nissue = "https://x/1"\n')
    got = expectations.apply(expectations.load_expectations(path), result(verdict, device=device))
    assert got.verdict == expected
    if expected in (XFAIL, XPASS):
        assert "bug 1" in got.message and got.issue == "https://x/1"
    if verdict == "crash":
        assert got.message == "outside tolerance (not the known failure of this case, which is verdict fail: bug 1)"


@pytest.mark.parametrize("verdict, release, expected", [
    ("crash", "2025.4.1", XFAIL), ("timeout", "2025.4.1", XFAIL), (FAIL, "2025.4.1", FAIL), ("crash", "2026.4.1", "crash")])
def test_a_known_failure_can_name_its_verdicts_and_releases(tmp_path, verdict, release, expected):
    path = tmp_path / "xfail.toml"
    path.write_text('[[xfail]]\ncase = "gru[*]"\nopenvino = "2025.*"\nverdict = "crash, timeout"\nreason = "r"\n')
    run = result(verdict)
    run.openvino_version = f"{release}-1-abc"
    assert expectations.apply(expectations.load_expectations(path), run).verdict == expected


@pytest.mark.parametrize("text, message", [
    ('[[xfail]]\ncase = "x"\n', "'case' .* and 'reason' are required"),
    ('[[xfail]]\ncase = "x"\nreason = "r"\nowner = "me"\n', "unknown key 'owner'"),
    ('[[xfail]]\ncase = "x"\nreason = "r"\nverdict = "fail,wrong"\n', "verdict 'wrong'; expected one or more of crash, "
     "error, fail, timeout"),
    ('[[xfail]]\ncase = "x"\nreason = "r"\nverdict = " , "\n', "verdict ' , '"),
    ('[other]\n', "expected only"),
])
def test_bad_known_failures_files(tmp_path, text, message):
    path = tmp_path / "xfail.toml"
    path.write_text(text)
    with pytest.raises(expectations.ExpectationsError, match=message):
        expectations.load_expectations(path)


def test_case_patterns_treat_brackets_literally():
    entry = expectations.Expected("gru[a=1,*]", reason="r")
    assert entry.matches(result(FAIL, "gru[a=1,seed=0]")) and not entry.matches(result(FAIL, "gru[a=2,seed=0]"))


def test_faults_match_on_case_fields():
    (fault,) = parse_faults("abort:hidden_size=2,device=CPU")
    job = Job(CASES[2], "CPU", "f32")  # hidden_size 2
    assert fault.matches(job) and not fault.matches(Job(CASES[0], "CPU", "f32"))
    assert not fault.matches(Job(CASES[2], "AUTO:CPU", "f32"))
    (by_case,) = parse_faults("hang:case=c1[*]")
    assert by_case.matches(job)


def test_changing_faults_add_up_and_end_nothing():
    from irtool.jobs.faults import inject

    faults = parse_faults("slow:1,case=c*;skew:1e-5,hidden_size=2;impl:TensorIterator (f32),device=CPU;slow:0.5")
    assert [(f.action, f.seconds, f.text) for f in faults] == [
        ("slow", 1.0, ""), ("skew", 1e-5, ""), ("impl", 0.0, "TensorIterator (f32)"), ("slow", 0.5, "")]
    changes = inject(faults, Job(CASES[2], "CPU", "f32"))
    assert (changes.slow, changes.skew, changes.implementation) == (1.5, 1e-5, "TensorIterator (f32)")
    assert inject(faults, Job(CASES[0], "GPU", "f32")).implementation is None


@pytest.mark.parametrize("text", ["explode:case=x", "abort:case", "skew:0", "skew:inf,case=x", "skew:x",
                                  "impl:case=x", "impl:"])
def test_bad_faults(text):
    with pytest.raises(FaultError):
        parse_faults(text)

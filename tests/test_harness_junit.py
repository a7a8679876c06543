"""junit.xml: counts per (device, precision), one element per verdict, a JUnit schema, hostile text."""
from __future__ import annotations

import pytest
from conftest_harness import GPU_REASON, HOSTILE, hostile_run, result, sample_run
from lxml import etree

from irtool.harness.junit import write_junit
from irtool.harness.store import RunResults

# A JUnit schema as Jenkins, GitLab and GitHub read it (the subset irtool writes).
JUNIT_XSD = b"""<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="count"><xs:restriction base="xs:nonNegativeInteger"/></xs:simpleType>
  <xs:simpleType name="seconds"><xs:restriction base="xs:decimal"><xs:minInclusive value="0"/></xs:restriction></xs:simpleType>
  <xs:complexType name="problem" mixed="true">
    <xs:attribute name="message" type="xs:string"/><xs:attribute name="type" type="xs:string"/>
  </xs:complexType>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="count" use="required"/><xs:attribute name="failures" type="count" use="required"/>
      <xs:attribute name="errors" type="count" use="required"/><xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="properties" minOccurs="0"><xs:complexType><xs:sequence>
          <xs:element name="property" minOccurs="0" maxOccurs="unbounded"><xs:complexType>
            <xs:attribute name="name" type="xs:string" use="required"/>
            <xs:attribute name="value" type="xs:string" use="required"/>
          </xs:complexType></xs:element>
        </xs:sequence></xs:complexType></xs:element>
        <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded"><xs:complexType>
          <xs:sequence>
            <xs:choice minOccurs="0">
              <xs:element name="skipped"><xs:complexType><xs:attribute name="message" type="xs:string"/></xs:complexType></xs:element>
              <xs:element name="error" type="problem"/>
              <xs:element name="failure" type="problem"/>
            </xs:choice>
            <xs:element name="system-out" type="xs:string" minOccurs="0"/>
          </xs:sequence>
          <xs:attribute name="name" type="xs:string" use="required"/>
          <xs:attribute name="classname" type="xs:string" use="required"/>
          <xs:attribute name="time" type="seconds" use="required"/>
        </xs:complexType></xs:element>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="count" use="required"/><xs:attribute name="failures" type="count" use="required"/>
      <xs:attribute name="errors" type="count" use="required"/><xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds"/><xs:attribute name="hostname" type="xs:string"/>
      <xs:attribute name="timestamp">
        <xs:simpleType><xs:restriction base="xs:dateTime">
          <xs:pattern value="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"/>
        </xs:restriction></xs:simpleType>
      </xs:attribute>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""


def _junit(tmp_path, run) -> etree._Element:
    path = tmp_path / "junit.xml"
    write_junit(path, run)
    return etree.parse(str(path)).getroot()


@pytest.fixture(scope="module")
def junit(tmp_path_factory) -> etree._Element:
    return _junit(tmp_path_factory.mktemp("junit"), sample_run())


def _case(root: etree._Element, suite: str, name: str) -> etree._Element:
    """The testcase of case ``name`` in ``suite`` ("CPU f32"): named ``name on CPU at f32``."""
    device, precision = suite.split(" ", 1)
    (case,) = root.xpath("testsuite[@name=$suite]/testcase[@name=$name]", suite=suite,
                         name=f"{name} on {device} at {precision}")
    return case


def test_validates_against_a_junit_schema(junit):
    schema = etree.XMLSchema(etree.fromstring(JUNIT_XSD))
    assert schema.validate(junit), schema.error_log


@pytest.mark.parametrize("suite, counts", [
    (None, ("15", "1", "3", "5", "3.750")),
    ("CPU f32", ("9", "1", "3", "1", "2.250")),  # the unjudged job is a skipped testcase
    ("CPU bf16", ("3", "0", "0", "1", "0.750")),
    ("GPU f32", ("3", "0", "0", "3", "0.750")),
])
def test_counts_per_device_and_precision(junit, suite, counts):
    element = junit if suite is None else junit.find(f"testsuite[@name='{suite}']")
    assert tuple(element.get(k) for k in ("tests", "failures", "errors", "skipped", "time")) == counts


def test_one_testsuite_per_device_and_precision_that_ran(junit):
    assert [s.get("name") for s in junit.iter("testsuite")] == ["CPU f32", "CPU bf16", "GPU f32"]  # no GPU bf16 jobs


@pytest.mark.parametrize("suite, name, classname", [
    ("CPU f32", "gru-a", "smoke.GRUSequence-5"),
    ("CPU f32", "ir/gru.xml", "smoke.GRUSequence-5"),
    ("CPU f32", "ir/two-ops.xml", "smoke.two_xml"),  # not one op: the model's file
    ("CPU f32", "lstm-a", "smoke.LSTMSequence-5"),
])
def test_classname_is_suite_and_op_or_model(junit, suite, name, classname):
    case = _case(junit, suite, name)
    assert case.get("classname") == classname
    assert case.get("time") == "0.250"


def test_failure_holds_the_output_statistics(junit):
    (failure,) = _case(junit, "CPU f32", "gru-fail")
    assert failure.tag == "failure" and failure.get("message") == "Y: 3 of 64 elements outside tolerance"
    lines = failure.text.splitlines()
    assert lines[1].startswith("Y  shape [2, 1, 4, 8]  max abs 0.05") and "outside 3/64 (4.7%)" in lines[1]
    assert lines[2].startswith("Ho ") and "atol 1e-05, rtol 0.0001 (f32 default)" in lines[2]


@pytest.mark.parametrize("name, verdict, text", [
    ("lstm-error", "error", "CPU cannot compile model.xml: bad"),
    ("lstm-crash", "crash", "worker died: signal 6 (SIGABRT)\nterminate called\nAborted \ufffd\ufffd[0m"),
    ("lstm-hang", "timeout", "ran past 5 s\nstill going"),
])
def test_error_crash_and_timeout_are_errors_with_stderr(junit, name, verdict, text):
    (error,) = _case(junit, "CPU f32", name)
    assert (error.tag, error.get("type"), error.text) == ("error", verdict, text)
    assert error.get("message") == text.splitlines()[0]


@pytest.mark.parametrize("suite, name, tag, text", [
    ("GPU f32", "gru-a", "skipped", GPU_REASON),
    ("CPU bf16", "gru-fail", "skipped", "xfail: bf16 drift (https://example.com/issues/1)"),
    ("CPU bf16", "lstm-a", "system-out", "now passes"),
    ("CPU f32", "ir/two-ops.xml", "skipped", "nothing judged: no reference applies"),  # never a pass
])
def test_skip_xfail_xpass_unjudged(junit, suite, name, tag, text):
    (child,) = _case(junit, suite, name)
    assert child.tag == tag
    assert text in (child.get("message") if tag == "skipped" else child.text)


def test_passing_case_has_no_children(junit):
    assert len(_case(junit, "CPU f32", "gru-a")) == 0


def test_hostile_text_round_trips(tmp_path):
    root = _junit(tmp_path, hostile_run())
    case = root.find("testsuite/testcase")
    assert case.get("name") == f"{HOSTILE} on CPU at f32" and case.find("failure").get("message") == HOSTILE


def test_names_are_unique_across_precisions_and_say_what_default_resolved_to(tmp_path):
    """CI tools show a testcase without its testsuite's name: CPU f32 and CPU default (which a CPU
    with AVX512_BF16 resolves to bf16) must not read the same; a model's results (its nodes', its
    expected outputs', its runtime's) share its class."""
    model = "samples/models/lstm2_bidirectional.onnx"
    results = [result(f"m::{name}", verdict, precision=precision, op=op, file=model, node=name,
                      effective_precision={"CPU": ran})
               for precision, ran in (("f32", "f32"), ("default", "bf16"))
               for name, verdict, op in (("lstm", "pass", "LSTM-14"), ("outputs", "pass", None),
                                         ("onnxruntime", "pass", None))]
    results.append(result("gru-a", "skip", precision="default", message="absent"))  # ran nowhere: no resolution
    root = _junit(tmp_path, RunResults({"devices": ["CPU"], "precisions": ["f32", "default"]}, results))
    names = [case.get("name") for case in root.iter("testcase")]
    assert len(names) == len(set(names)) == 7
    assert "m::lstm on CPU at default (bf16)" in names and "m::lstm on CPU at f32" in names
    assert "gru-a on CPU at default" in names
    assert [s.get("name") for s in root.iter("testsuite")] == ["CPU f32", "CPU default (bf16)"]
    assert {case.get("classname") for case in root.iter("testcase") if case.get("name").startswith("m::")} == \
        {"smoke.lstm2_bidirectional_onnx"}

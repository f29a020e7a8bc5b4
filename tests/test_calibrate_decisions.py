"""calibrate.decisions: reading DECISIONS.jsonl, and a clear error for every kind of bad line."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.decisions import (MAX_REPORTED_PROBLEMS, DecisionError, DecisionFileError,
                                 load_decisions, parse_decision, parse_decisions)

GOOD = {"alternatives": ["refund", "cancel", "track"], "posterior": [0.7, 0.2, 0.1],
        "chosen": "refund", "label": "cancel"}


def line(**changes) -> str:
    obj = dict(GOOD)
    for k, v in changes.items():
        if v is DROP:
            obj.pop(k, None)
        else:
            obj[k] = v
    return json.dumps(obj)


DROP = object()


def test_the_contract_example_reads():
    [d] = parse_decisions(json.dumps(GOOD))
    assert d.line == 1
    assert d.alternatives == ("refund", "cancel", "track")
    assert d.posterior == pytest.approx((0.7, 0.2, 0.1))
    assert (d.chosen, d.label, d.chosen_index, d.label_index) == ("refund", "cancel", 0, 1)
    assert d.confidence == pytest.approx(0.7) and d.correct is False


def test_server_output_with_extra_fields_reads():
    # what llamay_choice_logprobs returns (enum alternatives as JSON text) plus a label and notes
    obj = {"alternatives": ['"yes"', '"no"'], "logprobs": [-0.1, -2.4], "posterior": [0.909, 0.091],
           "chosen": '"yes"', "label": '"yes"', "prompt_id": 17, "meta": {"model": "x"}}
    [d] = parse_decisions(json.dumps(obj))
    assert d.alternatives == ('"yes"', '"no"') and d.correct


@pytest.mark.parametrize("text, field, fragment", [
    ("{not json", None, "not valid JSON"),
    ('{"alternatives": ["a"]', None, "not valid JSON"),
    ("[1, 2]", None, "expected a JSON object, got array"),
    ('"refund"', None, "expected a JSON object, got string"),
    (line(alternatives=DROP), "alternatives", "missing"),
    (line(posterior=DROP), "posterior", "missing"),
    (line(chosen=DROP), "chosen", "missing"),
    (line(label=DROP), "label", "missing (the report needs labelled decisions)"),
    (line(alternatives="refund"), "alternatives", "expected an array, got string"),
    (line(alternatives=[], posterior=[]), "alternatives", "is empty"),
    (line(alternatives=["refund", [2], "track"]), "alternatives",
     "item 1 is array [2], expected a string, number, boolean or null"),
    (line(alternatives=["refund", {"a": 1}, "track"]), "alternatives", "item 1 is object"),
    (line(alternatives=["refund", "cancel", "refund"]), "alternatives",
     'duplicate alternative "refund"'),
    (line(alternatives=[1, "cancel", 1.0], chosen=1, label=1), "alternatives",
     "duplicate alternative 1.0"),
    (line(posterior={"refund": 1}), "posterior", "expected an array of numbers, got object"),
    (line(posterior=[0.7, 0.3]), "posterior", "has 2 values for 3 alternatives"),
    (line(posterior=[0.5, 0.2, 0.1, 0.2]), "posterior", "has 4 values for 3 alternatives"),
    (line(posterior=[0.7, "0.2", 0.1]), "posterior", 'item 1 is string "0.2"'),
    (line(posterior=[True, 0, 0]), "posterior", "item 0 is boolean true"),
    (line(posterior=[0.7, None, 0.3]), "posterior", "item 1 is null"),
    (line(posterior=[1.2, -0.2, 0.0]), "posterior", "item 1 is negative (-0.2)"),
    (line(posterior=[0.5, 0.7, -0.2]), "posterior", "item 2 is negative (-0.2)"),
    ('{"alternatives": ["a", "b"], "posterior": [NaN, 1], "chosen": "a", "label": "a"}',
     "posterior", "item 0 is nan, expected a finite number"),
    ('{"alternatives": ["a", "b"], "posterior": [Infinity, 0], "chosen": "a", "label": "a"}',
     "posterior", "item 0 is inf"),
    (line(posterior=[-0.4, -1.6, -2.3]), "posterior",
     "item 0 is negative (-0.4); these look like logprobs"),
    (line(posterior=[0.7, 0.2, 0.2]), "posterior", "sums to 1.1, not 1"),
    (line(posterior=[0.0, 0.0, 0.0]), "posterior", "sums to 0, not 1"),
    (line(chosen="refunds"), "chosen", '"refunds" is not among the alternatives'),
    (line(chosen=None), "chosen", "is null (the output matched no alternative)"),
    (line(chosen=0), "chosen", "0 is not among the alternatives"),
    (line(chosen=True), "chosen", "true is not among the alternatives"),
    (line(label="delivery"), "label", '"delivery" is not among the alternatives'),
    (line(label=None), "label", "is null"),
    (line(label=["cancel"]), "label", "expected a string, number, boolean or null, got array"),
    (line(alternatives=[True, False], posterior=[0.5, 0.5], chosen=True, label=1), "label",
     "1 is not among the alternatives"),
])
def test_bad_line_names_line_and_field(text, field, fragment):
    data = "\n".join([json.dumps(GOOD), "", text, json.dumps(GOOD)])
    with pytest.raises(DecisionFileError) as info:
        parse_decisions(data, "d.jsonl")
    err = info.value
    assert err.total_problems == 1
    [problem] = err.problems
    assert isinstance(problem, DecisionError)
    assert problem.line == 3                       # the blank line 2 still counts
    assert problem.field == field
    assert fragment in problem.reason
    where = "line 3" + (f", field '{field}'" if field else "")
    assert f"{where}: " in str(err)
    assert str(err).startswith("d.jsonl: 1 bad line:")


@pytest.mark.parametrize("label, suggestion", [
    ("refund", '"\\"refund\\""'),                # bare label against JSON-text alternatives
])
def test_bare_label_against_json_text_alternatives_gets_a_hint(label, suggestion):
    obj = {"alternatives": ['"refund"', '"cancel"'], "posterior": [0.6, 0.4], "chosen": '"refund"',
           "label": label}
    with pytest.raises(DecisionError, match="did you mean") as info:
        parse_decision(5, json.dumps(obj))
    assert suggestion in str(info.value)
    assert info.value.field == "label" and info.value.line == 5


def test_quoted_label_against_bare_alternatives_gets_a_hint():
    obj = {"alternatives": ["refund", "cancel"], "posterior": [0.6, 0.4], "chosen": "refund",
           "label": '"cancel"'}
    with pytest.raises(DecisionError, match='did you mean "cancel"'):
        parse_decision(1, json.dumps(obj))


@pytest.mark.parametrize("posterior, tolerance, ok", [
    ([0.71, 0.05, 0.25], 0.01, True),     # rounded to 2 decimals, sums to 1.01
    ([0.70, 0.20, 0.09], 0.01, True),     # .99
    ([0.70, 0.20, 0.08], 0.01, False),    # .98
    ([0.70, 0.20, 0.08], 0.05, True),
    ([0.7, 0.2, 0.1000001], 0.0, False),  # tolerance 0 wants the exact sum ...
    ([0.5, 0.25, 0.25], 0.0, True),       # ... which exact binary fractions have
])
def test_posterior_sum_tolerance(posterior, tolerance, ok):
    text = line(posterior=posterior)
    if ok:
        [d] = parse_decisions(text, sum_tolerance=tolerance)
        assert sum(d.posterior) == pytest.approx(1.0, abs=1e-15)
        total = sum(posterior)
        assert d.posterior == pytest.approx(tuple(p / total for p in posterior), abs=1e-15)
    else:
        with pytest.raises(DecisionFileError, match="not 1"):
            parse_decisions(text, sum_tolerance=tolerance)


def test_negative_tolerance_is_refused():
    with pytest.raises(ValueError):
        parse_decisions(json.dumps(GOOD), sum_tolerance=-0.1)


@pytest.mark.parametrize("data", [b"", b"\n", b"  \n\t\n\r\n", "\ufeff".encode("utf-8")])
def test_no_decisions_is_an_error(data):
    with pytest.raises(DecisionFileError, match="no decisions") as info:
        parse_decisions(data, "empty.jsonl")
    assert info.value.problems == []


def test_blank_lines_crlf_and_bom():
    data = ("\ufeff" + json.dumps(GOOD) + "\r\n\r\n   \r\n"
            + json.dumps(GOOD) + "\r\n").encode("utf-8")
    ds = parse_decisions(data)
    assert [d.line for d in ds] == [1, 4]


def test_line_separators_inside_strings_do_not_split_lines():
    # U+2028 and U+0085 are line breaks to str.splitlines but legal inside a JSON string
    alts = ["a\u2028b", "c\u0085d"]
    text = json.dumps({"alternatives": alts, "posterior": [0.5, 0.5], "chosen": alts[0],
                       "label": alts[1]}, ensure_ascii=False)
    [d] = parse_decisions(text + "\n" + "\n")
    assert d.alternatives == tuple(alts)


def test_invalid_utf8_names_the_line():
    data = json.dumps(GOOD).encode() + b"\n" + b'{"alternatives": ["\xff"]}\n'
    with pytest.raises(DecisionFileError) as info:
        parse_decisions(data)
    assert info.value.problems[0].line == 2 and "not UTF-8" in str(info.value)


def test_every_bad_line_is_counted_and_the_first_few_shown():
    bad = MAX_REPORTED_PROBLEMS + 5
    data = "\n".join([json.dumps(GOOD)] + ["{oops"] * bad)
    with pytest.raises(DecisionFileError) as info:
        parse_decisions(data, "many.jsonl")
    err = info.value
    assert err.total_problems == bad
    assert [p.line for p in err.problems] == list(range(2, 2 + MAX_REPORTED_PROBLEMS))
    assert f"{bad} bad lines" in str(err) and "... and 5 more" in str(err)


def test_load_decisions_reads_a_file_and_reports_a_missing_one(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    assert len(load_decisions(path)) == 1
    with pytest.raises(DecisionFileError, match="cannot read it"):
        load_decisions(tmp_path / "absent.jsonl")
    with pytest.raises(DecisionFileError, match="cannot read it"):
        load_decisions(tmp_path)                       # a directory


def test_the_committed_example_reads():
    from pathlib import Path
    example = (Path(__file__).resolve().parent.parent
               / "testdata/calibration/decisions-example.jsonl")
    ds = load_decisions(example)
    assert len(ds) == 150
    assert {len(d.alternatives) for d in ds} == {2, 3, 4}


@st.composite
def valid_record(draw):
    alts = draw(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=5, unique=True))
    weights = draw(st.lists(st.integers(0, 100), min_size=len(alts), max_size=len(alts))
                   .filter(lambda w: sum(w) > 0))
    total = sum(weights)
    return {"alternatives": alts, "posterior": [w / total for w in weights],
            "chosen": draw(st.sampled_from(alts)), "label": draw(st.sampled_from(alts)),
            "extra": draw(st.none() | st.integers())}


@settings(max_examples=100, deadline=None)
@given(st.lists(valid_record(), min_size=1, max_size=10), st.booleans())
def test_valid_records_round_trip(records, ascii_only):
    text = "\n".join(json.dumps(r, ensure_ascii=ascii_only) for r in records)
    ds = parse_decisions(text)
    assert [d.line for d in ds] == list(range(1, len(records) + 1))
    for d, r in zip(ds, records):
        assert list(d.alternatives) == r["alternatives"]
        assert (d.chosen, d.label) == (r["chosen"], r["label"])
        assert list(d.posterior) == pytest.approx(r["posterior"], abs=1e-12)


# alternatives are JSON values compared by JSON equality (the contract's decision shape)
@pytest.mark.parametrize("alternatives, chosen, label, correct", [
    ([True, False], True, False, False),
    ([True, False], False, False, True),
    ([1, 2.5, None], 1.0, 1, True),               # 1.0 is the JSON number 1
    ([1, 2.5, None], None, None, True),           # null is a value like any other
    ([0, 1], 0, 1, False),
    (["1", 1], "1", 1, False),                    # the string "1" is not the number 1
    ([True, 1], 1, True, False),                  # nor is true the number 1 (as in Python)
])
def test_json_values_compare_by_json_equality(alternatives, chosen, label, correct):
    text = json.dumps({"alternatives": alternatives,
                       "posterior": [1 / len(alternatives)] * len(alternatives),
                       "chosen": chosen, "label": label})
    [d] = parse_decisions(text)
    assert d.correct is correct
    assert d.alternatives[d.chosen_index] == chosen and d.alternatives[d.label_index] == label
    assert type(d.alternatives[d.chosen_index]) is not bool or isinstance(chosen, bool)


@pytest.mark.parametrize("alternatives, label, hint", [
    ([True, False], "true", "did you mean true (boolean)?"),
    (["true", "false"], True, 'the alternatives are JSON text, did you mean "true"?'),
    ([1, 2], "2", "did you mean 2 (number)?"),
])
def test_value_written_as_text_gets_a_hint(alternatives, label, hint):
    obj = {"alternatives": alternatives, "posterior": [0.5, 0.5], "chosen": alternatives[0],
           "label": label}
    with pytest.raises(DecisionError) as info:
        parse_decision(1, json.dumps(obj))
    assert hint in str(info.value)


@pytest.mark.parametrize("logprobs, fragment", [
    (DROP, "missing (fitting or applying a calibration needs the raw log-probabilities)"),
    ([-0.1, -2.0], "has 2 values for 3 alternatives"),
    ([-0.1, "x", -3.0], 'item 1 is string "x"'),
    ([-0.1, 0.4, -3.0], "item 1 is positive (0.4)"),
    ("-0.1", "expected an array of numbers, got string"),
])
def test_logprobs_are_checked_only_when_required(logprobs, fragment):
    text = line(logprobs=logprobs)
    [d] = parse_decisions(text)                  # the report alone ignores them
    assert d.logprobs is None
    with pytest.raises(DecisionFileError) as info:
        parse_decisions(text, require_logprobs=True)
    [problem] = info.value.problems
    assert problem.field == "logprobs" and fragment in problem.reason


def test_logprobs_read_when_required():
    [d] = parse_decisions(line(logprobs=[-0.4, -2.1, 0.0000001]), require_logprobs=True)
    assert d.logprobs == (-0.4, -2.1, 0.0)

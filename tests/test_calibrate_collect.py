"""`calibrate collect`: dataset validation, decision lines, resume, failures, progress, and the
--url runner (httpx.MockTransport, and a starlette stub on loopback through the command)."""
from __future__ import annotations

import io
import json
import socket
import threading
import time

import httpx
import pytest
from click.testing import CliRunner

from calibrate import collect as C
from calibrate.decisions import load_decisions
from server.cli import main

INTENTS = ["refund", "cancel", "track"]
SCHEMA = {"type": "object",
          "properties": {"intent": {"enum": INTENTS}, "urgent": {"type": "boolean"}},
          "required": ["intent", "urgent"]}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
         for n in ("get_weather", "send_email", "book_table")]


def dataset_line(i: int, **changes) -> dict:
    obj = {"id": f"r{i}", "messages": [{"role": "user", "content": f"message {i}"}],
           "schema": SCHEMA, "pointer": "/intent", "label": INTENTS[i % 3], "split": "dev"}
    obj.update(changes)
    return {k: v for k, v in obj.items() if v is not DROP}


DROP = object()


def decisions_for(request) -> list:
    """What a server would answer: a decision at /intent (and one at /urgent), or the tool."""
    i = int(request["messages"][0]["content"].split()[-1])
    if "tools" in request:
        names = [t["function"]["name"] for t in request["tools"]]
        return [{"pointer": "tool", "alternatives": names, "logprobs": [-0.1, -2.5, -3.0],
                 "posterior": [0.87, 0.08, 0.05], "probed_mass": 0.9, "chosen": names[0]}]
    return [{"pointer": "/intent", "alternatives": INTENTS, "logprobs": [-0.3, -1.5, -2.9],
             "posterior": [0.7, 0.22, 0.08], "probed_mass": 0.95, "chosen": INTENTS[i % 2]},
            {"pointer": "/urgent", "alternatives": [True, False], "logprobs": [-1.0, -0.5],
             "posterior": [0.38, 0.62], "probed_mass": 0.99, "chosen": False}]


class CountingRunner:
    def __init__(self, fail_ids=(), interrupt_at=None):
        self.calls = []
        self.fail_ids = set(fail_ids)
        self.interrupt_at = interrupt_at

    def __call__(self, request):
        i = int(request["messages"][0]["content"].split()[-1])
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        self.calls.append(i)
        if i in self.fail_ids:
            raise C.RunnerError("HTTP 500: boom")
        return decisions_for(request)


def write_dataset(tmp_path, lines, name="dataset.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def out_ids(path):
    return [json.loads(ln)["id"] for ln in path.read_text().splitlines() if ln.strip()]


def test_decision_lines_have_the_contract_shape(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(3)]))
    out = tmp_path / "decisions.jsonl"
    summary = C.collect(items, out, CountingRunner(), progress=False)
    assert summary.ok and summary.written == 3
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert rows[1] == {"pointer": "/intent", "alternatives": INTENTS,
                       "logprobs": [-0.3, -1.5, -2.9], "posterior": [0.7, 0.22, 0.08],
                       "probed_mass": 0.95, "chosen": "cancel",
                       "label": "cancel", "id": "r1", "split": "dev"}
    ds = load_decisions(out, require_logprobs=True)       # reads for report and fit alike
    assert [d.correct for d in ds] == [True, True, False]


def test_tool_decision_and_boolean_pointer(tmp_path):
    lines = [dataset_line(0, schema=DROP, tools=TOOLS, pointer="tool", label="send_email"),
             dataset_line(1, pointer="/urgent", label=True)]
    out = tmp_path / "d.jsonl"
    summary = C.collect(C.load_dataset(write_dataset(tmp_path, lines)), out, CountingRunner(),
                        progress=False)
    assert summary.ok
    a, b = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert (a["pointer"], a["chosen"], a["label"]) == ("tool", "get_weather", "send_email")
    assert ((b["pointer"], b["alternatives"], b["chosen"], b["label"])
            == ("/urgent", [True, False], False, True))


def test_resume_after_an_interruption_runs_each_line_once(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(8)]))
    out = tmp_path / "d.jsonl"
    first = CountingRunner(interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        C.collect(items, out, first, progress=False)
    assert out_ids(out) == ["r0", "r1", "r2"]
    second = CountingRunner()
    summary = C.collect(items, out, second, progress=False)
    assert second.calls == [3, 4, 5, 6, 7]
    assert (summary.already_done, summary.written, summary.ok) == (3, 5, True)
    assert out_ids(out) == [f"r{i}" for i in range(8)]
    third = CountingRunner()
    assert C.collect(items, out, third, progress=False).written == 0 and third.calls == []


def test_a_partial_last_line_is_cut_and_redone(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(4)]))
    out = tmp_path / "d.jsonl"
    C.collect(items[:2], out, CountingRunner(), progress=False)
    with open(out, "a") as f:
        f.write('{"pointer": "/intent", "alternatives": ["ref')      # killed mid-write
    runner = CountingRunner()
    C.collect(items, out, runner, progress=False)
    assert runner.calls == [2, 3]
    assert out_ids(out) == ["r0", "r1", "r2", "r3"]
    assert len(load_decisions(out)) == 4


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(3)]))
    out = tmp_path / "d.jsonl"
    C.collect(items[:2], out, CountingRunner(), progress=False)
    out.write_text(out.read_text().rstrip("\n"))
    runner = CountingRunner()
    C.collect(items, out, runner, progress=False)
    assert runner.calls == [2]
    assert out_ids(out) == ["r0", "r1", "r2"] and len(load_decisions(out)) == 3


def test_failed_lines_are_not_written_and_are_retried(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(5)]))
    out = tmp_path / "d.jsonl"
    summary = C.collect(items, out, CountingRunner(fail_ids={1, 3}), progress=False)
    assert not summary.ok and summary.written == 3
    assert [f.split(":")[0] for f in summary.failed] == ['id "r1" (line 2)', 'id "r3" (line 4)']
    assert "HTTP 500: boom" in summary.failed[0]
    text = summary.describe(out)
    assert "3 written" in text and "2 failed" in text and "run the same command again" in text
    retry = CountingRunner()
    assert C.collect(items, out, retry, progress=False).ok and retry.calls == [1, 3]
    assert sorted(out_ids(out)) == [f"r{i}" for i in range(5)]


@pytest.mark.parametrize("line, answer, fragment", [
    (dataset_line(0, pointer="/missing"), None, 'no decision at pointer "/missing"'),
    (dataset_line(0, label="delivery"), None, '"delivery" is not among the alternatives'),
    (dataset_line(0), [{"pointer": "/intent", "posterior": [1.0]}], "field 'alternatives'"),
    (dataset_line(0), "text", "expected a list of decisions"),
])
def test_unusable_answers_are_failures(tmp_path, line, answer, fragment):
    items = C.load_dataset(write_dataset(tmp_path, [line]))
    out = tmp_path / "d.jsonl"
    runner = (lambda request: answer) if answer is not None else CountingRunner()
    summary = C.collect(items, out, runner, progress=False)
    assert not summary.ok and summary.written == 0
    assert fragment in summary.failed[0]
    assert out.read_text() == ""


def test_whole_output_decision_object_counts_as_pointer_empty(tmp_path):
    line = dataset_line(0, schema={"enum": INTENTS}, pointer="", label="track")
    items = C.load_dataset(write_dataset(tmp_path, [line]))
    answer = {"alternatives": INTENTS, "logprobs": [-1, -2, -0.1], "posterior": [0.25, 0.1, 0.65],
              "chosen": "track"}
    out = tmp_path / "d.jsonl"
    assert C.collect(items, out, lambda request: answer, progress=False).ok
    assert json.loads(out.read_text())["pointer"] == ""


def test_an_unreachable_runner_stops_the_run(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(4)]))
    calls = []

    def down(request):
        calls.append(1)
        raise C.RunnerUnavailable("cannot reach http://127.0.0.1:9")
    summary = C.collect(items, tmp_path / "d.jsonl", down, progress=False)
    assert len(calls) == 1 and not summary.ok and "cannot reach" in summary.stopped
    assert "4 of 4 still to do" in summary.describe("d.jsonl")


def test_progress_bar_shows_count_rate_and_eta(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(i) for i in range(6)]))
    out = tmp_path / "d.jsonl"
    C.collect(items[:2], out, CountingRunner(), progress=False)
    bar = io.StringIO()
    C.collect(items, out, CountingRunner(fail_ids={4}), progress_file=bar, progress=True)
    text = bar.getvalue()
    assert "collect" in text and "6/6" in text and "2/6" in text     # resumed at 2
    assert "req/s" in text and "<" in text                            # rate and elapsed<remaining
    assert "failed=1" in text


def test_out_file_that_is_not_decisions_is_refused(tmp_path):
    items = C.load_dataset(write_dataset(tmp_path, [dataset_line(0)]))
    out = tmp_path / "d.jsonl"
    out.write_text("hello\n")
    with pytest.raises(C.DatasetError, match="line 1 is not a decision line"):
        C.collect(items, out, CountingRunner(), progress=False)
    assert out.read_text() == "hello\n"


@pytest.mark.parametrize("line, fragment", [
    ("[1]", "expected a JSON object"),
    ("{oops", "Expecting"),
    (json.dumps(dataset_line(0, id=DROP)), "missing 'id'"),
    (json.dumps(dataset_line(0, label=DROP)), "missing 'label'"),
    (json.dumps(dataset_line(0, id=True)), "'id' must be a string or an integer"),
    (json.dumps(dataset_line(0, messages=[])), "'messages' must be a non-empty array"),
    (json.dumps(dataset_line(0, schema=DROP)), "exactly one of 'schema' and 'tools'"),
    (json.dumps(dataset_line(0, tools=TOOLS)), "exactly one of 'schema' and 'tools'"),
    (json.dumps(dataset_line(0, pointer="tool")), "needs 'tools'"),
    (json.dumps(dataset_line(0, pointer="intent")), "must be \"tool\" or a JSON pointer"),
    (json.dumps(dataset_line(0, label=["refund"])), "'label' must be a string, number"),
    (json.dumps(dataset_line(0, posterior=[1])), "field 'posterior' is reserved"),
    (json.dumps(dataset_line(0, tools=[], schema=DROP)), "'tools' must be a non-empty array"),
])
def test_bad_dataset_lines_are_named(tmp_path, line, fragment):
    path = tmp_path / "ds.jsonl"
    path.write_text(json.dumps(dataset_line(1)) + "\n" + line + "\n")
    with pytest.raises(C.DatasetError) as info:
        C.load_dataset(path)
    assert "1 bad line" in str(info.value)
    [problem] = info.value.problems
    assert problem.startswith("line 2: ") and fragment in problem


def test_duplicate_ids_are_refused_and_1_differs_from_text_1(tmp_path):
    path = write_dataset(tmp_path, [dataset_line(0, id=1), dataset_line(1, id="1"),
                                    dataset_line(2, id=1)])
    with pytest.raises(C.DatasetError, match="line 3: id 1 already used on line 1"):
        C.load_dataset(path)


# --- the --url runner -----------------------------------------------------------------------

def mock_client(handler):
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_url_runner_sends_the_schema_request():
    seen = []

    def handler(request):
        seen.append(request)
        return httpx.Response(200, json={"choices": [], "llamay_choice_logprobs": decisions_for(
            {"messages": json.loads(request.content)["messages"]})})
    run = C.url_runner("http://llamay.test/", api_key="k", model="m", client=mock_client(handler))
    item = C._item(1, dataset_line(4))
    assert run(item.request())[0]["pointer"] == "/intent"
    [req] = seen
    assert str(req.url) == "http://llamay.test/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer k"
    body = json.loads(req.content)
    assert (body["llamay_choice_logprobs"] is True and body["model"] == "m"
            and body["temperature"] == 0)
    assert body["messages"] == item.messages
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "collect", "schema": SCHEMA, "strict": True}}
    assert "tools" not in body


def test_url_runner_sends_the_tools_request():
    bodies = []

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"llamay_choice_logprobs": []})
    run = C.url_runner("http://llamay.test/v1", client=mock_client(handler))
    run(C._item(1, dataset_line(0, schema=DROP, tools=TOOLS, pointer="tool", label="x")).request())
    [body] = bodies
    assert body["tools"] == TOOLS and body["tool_choice"] == "required"
    assert "response_format" not in body and "model" not in body


@pytest.mark.parametrize("response, error, fragment", [
    (httpx.Response(400, json={"error": {"message": "bad schema"}}), C.RunnerError,
     "HTTP 400: bad schema"),
    (httpx.Response(500, text="oops"), C.RunnerError, "HTTP 500: oops"),
    (httpx.Response(200, json={"choices": []}), C.RunnerError, "no llamay_choice_logprobs"),
    (httpx.Response(200, text="<html>"), C.RunnerError, "not JSON"),
    (httpx.ConnectError("refused"), C.RunnerUnavailable, "cannot reach"),
])
def test_url_runner_errors(response, error, fragment):
    def handler(request):
        if isinstance(response, Exception):
            raise response
        return response
    run = C.url_runner("http://llamay.test", client=mock_client(handler))
    with pytest.raises(error, match=fragment):
        run(C._item(1, dataset_line(0)).request())


@pytest.mark.parametrize("url, endpoint", [
    ("http://h:1", "http://h:1/v1/chat/completions"),
    ("http://h:1/", "http://h:1/v1/chat/completions"),
    ("http://h:1/v1", "http://h:1/v1/chat/completions"),
    ("http://h:1/v1/chat/completions", "http://h:1/v1/chat/completions"),
])
def test_chat_completions_url(url, endpoint):
    assert C.chat_completions_url(url) == endpoint


# --- the command, against a starlette stub on loopback -------------------------------------

@pytest.fixture
def stub_server():
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    calls = []

    async def chat(request):
        body = await request.json()
        calls.append(body)
        if body["messages"][0]["content"].endswith(" 2"):
            return JSONResponse({"error": {"message": "model overloaded"}}, status_code=503)
        return JSONResponse({"choices": [], "llamay_choice_logprobs": decisions_for(body)})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "stub server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", calls
    server.should_exit = True
    thread.join(10)


def invoke(*args):
    return CliRunner().invoke(main, ["calibrate", "collect", *map(str, args)])


def test_collect_command_against_a_server(tmp_path, stub_server):
    url, calls = stub_server
    dataset = write_dataset(tmp_path, [dataset_line(i) for i in range(4)])
    out = tmp_path / "d.jsonl"
    r = invoke(dataset, "--out", out, "--url", url)
    assert r.exit_code == 1, r.output                     # line 3 (id r2) failed
    assert 'id "r2" (line 3): HTTP 503: model overloaded' in r.stderr
    assert out_ids(out) == ["r0", "r1", "r3"]
    assert len(calls) == 4
    r = invoke(dataset, "--out", out, "--url", url, "--no-progress")
    assert r.exit_code == 1 and len(calls) == 5           # only the failed line again
    assert "0 written, 3 already in" in r.stderr


def test_collect_command_succeeds_and_shows_progress(tmp_path, stub_server):
    url, _ = stub_server
    dataset = write_dataset(tmp_path, [dataset_line(i) for i in (0, 1, 3)])
    out = tmp_path / "d.jsonl"
    r = invoke(dataset, "--out", out, "--url", url)
    assert r.exit_code == 0, r.output
    assert "3/3" in r.stderr and "req/s" in r.stderr
    assert "3 written, 0 already in" in r.stderr


@pytest.mark.parametrize("args, fragment", [
    (["{dataset}", "--out", "{out}", "-m", "model.gguf", "--url", "http://x"], "not both"),
    # in-process (the server's own app behind an ASGI client; tests/test_server_calibration.py
    # runs it on the fixture model): a model file that is not there is bad input
    (["{dataset}", "--out", "{out}", "-m", "model.gguf"], "model file not found"),
    (["{bad}", "--out", "{out}", "--url", "http://x"], "line 1: expected a JSON object"),
    (["{dataset}", "--url", "http://x"], "--out"),
    (["{missing}", "--out", "{out}", "--url", "http://x"], "cannot read it"),
])
def test_collect_usage_errors_exit_2(tmp_path, args, fragment):
    paths = {"dataset": write_dataset(tmp_path, [dataset_line(0)]), "out": tmp_path / "d.jsonl",
             "bad": tmp_path / "bad.jsonl", "missing": tmp_path / "absent.jsonl"}
    paths["bad"].write_text("[]\n")
    r = invoke(*[a.format(**paths) for a in args])
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr and "Traceback" not in r.output


def test_unreachable_server_exits_1_and_names_it(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    dataset = write_dataset(tmp_path, [dataset_line(0), dataset_line(1)])
    r = invoke(dataset, "--out", tmp_path / "d.jsonl", "--url", f"http://127.0.0.1:{port}",
               "--no-progress")
    assert r.exit_code == 1
    assert "stopped: cannot reach" in r.stderr and "2 of 2 still to do" in r.stderr

"""`llamay calibrate collect`: run a labelled dataset through the model, write decision lines.

DATASET.jsonl, one request per line (docs/calibration.md):
    {"id": ..., "messages": [...], "schema": {...} | "tools": [...], "pointer": ..., "label": ...}
plus any other fields, which are copied to the output line. A runner turns one dataset line into
the list of decisions the server reports (the contract's `llamay_choice_logprobs` list);
collect keeps the decision whose pointer equals the line's pointer (the first one when several
share it, e.g. parallel tool calls), adds `label`, `id` and the extra fields, checks the result
reads as a decision line, and appends it to --out.

Resume rule: ids already in --out are skipped, new lines are appended. A line whose request
failed is not written (so DECISIONS.jsonl stays a clean input for report and fit): it is named
in the summary, collect exits 1, and the next run retries it. A partial last line (the run was
killed mid-write) is cut off before appending, and that id is redone (a complete last line that
only lacks its newline is kept).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, IO, List, Mapping, Optional, Sequence, Set, Union

from .decisions import DecisionError, is_scalar, parse_decision

Runner = Callable[[Mapping[str, Any]], List[Dict[str, Any]]]

DATASET_FIELDS = ("id", "messages", "schema", "tools", "pointer", "label")
# fields of an output line that an extra dataset field may not overwrite
RESERVED_FIELDS = frozenset(DATASET_FIELDS) | {"alternatives", "logprobs", "posterior",
                                               "probed_mass", "chosen", "calibration", "error"}
TOOL_POINTER = "tool"
MAX_REPORTED = 10


class DatasetError(ValueError):
    """A dataset (or an --out file) collect cannot use; `problems` are per-line messages."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        self.problems = list(problems)
        super().__init__(message)


class RunnerError(Exception):
    """One request failed (HTTP error, a decision missing, a label not among the alternatives)."""


class RunnerUnavailable(RunnerError):
    """The runner cannot run anything (server unreachable): collect stops instead of failing
    every remaining line the same way."""


@dataclass(frozen=True)
class DatasetItem:
    line: int
    id: Any
    messages: list
    schema: Optional[Any]
    tools: Optional[list]
    pointer: str
    label: Any
    extra: Dict[str, Any]

    @property
    def key(self) -> str:
        return id_key(self.id)

    def request(self) -> Dict[str, Any]:
        """What a runner needs: the messages and the schema or the tools."""
        out: Dict[str, Any] = {"messages": self.messages}
        if self.schema is not None:
            out["schema"] = self.schema
        if self.tools is not None:
            out["tools"] = self.tools
        return out


def id_key(value) -> str:
    # "1" and 1 are different ids; JSON text keeps them apart
    return json.dumps(value, sort_keys=True)


def _item(line: int, obj) -> DatasetItem:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    missing = [f for f in ("id", "messages", "pointer", "label") if f not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(repr(m) for m in missing)}")
    ident = obj["id"]
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        raise ValueError("'id' must be a string or an integer")
    messages = obj["messages"]
    if (not isinstance(messages, list) or not messages
            or not all(isinstance(m, dict) for m in messages)):
        raise ValueError("'messages' must be a non-empty array of message objects")
    has_schema, has_tools = "schema" in obj, "tools" in obj
    if has_schema == has_tools:
        raise ValueError("needs exactly one of 'schema' and 'tools'")
    schema = obj.get("schema")
    if has_schema and not isinstance(schema, (dict, bool)):
        raise ValueError("'schema' must be a JSON Schema (an object)")
    tools = obj.get("tools")
    if has_tools and (not isinstance(tools, list) or not tools):
        raise ValueError("'tools' must be a non-empty array")
    pointer = obj["pointer"]
    if not isinstance(pointer, str):
        raise ValueError("'pointer' must be a string")
    if pointer == TOOL_POINTER and not has_tools:
        raise ValueError("pointer \"tool\" labels the choice of tool and needs 'tools'")
    if pointer != TOOL_POINTER and pointer and not pointer.startswith("/"):
        raise ValueError(f"'pointer' must be \"tool\" or a JSON pointer (\"\" or \"/...\"), "
                         f"got {json.dumps(pointer)}")
    label = obj["label"]
    if not is_scalar(label):
        raise ValueError("'label' must be a string, number, boolean or null")
    clash = sorted(k for k in obj if k not in DATASET_FIELDS and k in RESERVED_FIELDS)
    if clash:
        raise ValueError(f"field {clash[0]!r} is reserved for the output decision")
    extra = {k: v for k, v in obj.items() if k not in DATASET_FIELDS}
    return DatasetItem(line, ident, messages, schema, tools, pointer, label, extra)


def load_dataset(path: Union[str, Path]) -> List[DatasetItem]:
    """Every line validated up front; DatasetError lists the bad ones (and duplicate ids)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read it ({e.strerror or e})") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    items: List[DatasetItem] = []
    problems: List[str] = []
    seen: Dict[str, int] = {}
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        try:
            item = _item(number, json.loads(chunk.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as e:
            problems.append(f"line {number}: {e}")
            continue
        if item.key in seen:
            problems.append(f"line {number}: id {item.key} already used on line {seen[item.key]}")
            continue
        seen[item.key] = number
        items.append(item)
    if problems:
        shown = "\n".join(f"  {p}" for p in problems[:MAX_REPORTED])
        more = (f"\n  ... and {len(problems) - MAX_REPORTED} more"
                if len(problems) > MAX_REPORTED else "")
        raise DatasetError(f"{path}: {len(problems)} bad line(s):\n{shown}{more}", problems)
    if not items:
        raise DatasetError(f"{path}: no requests (the file is empty or blank)")
    return items


def read_done(out_path: Union[str, Path]) -> Set[str]:
    """The ids already written to --out. A partial last line is cut off (the file is truncated
    to its last newline); any other line that is not a JSON object with an id is an error, so
    collect never appends to a file it does not understand."""
    path = Path(out_path)
    if not path.exists():
        return set()
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read it ({e.strerror or e})") from None
    if raw and not raw.endswith(b"\n"):
        cut = raw.rfind(b"\n") + 1
        if _is_decision_line(raw[cut:]):
            with open(path, "ab") as f:     # complete, only the newline is missing: keep it
                f.write(b"\n")
            raw += b"\n"
        else:
            with open(path, "r+b") as f:
                f.truncate(cut)
            raw = raw[:cut]
    done: Set[str] = set()
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        if not _is_decision_line(chunk):
            raise DatasetError(f"{path}: line {number} is not a decision line with an 'id'; "
                               f"refusing to append to it (choose another --out)")
        done.add(id_key(json.loads(chunk.decode("utf-8"))["id"]))
    return done


def _is_decision_line(chunk: bytes) -> bool:
    try:
        obj = json.loads(chunk.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and "id" in obj


def decision_line(item: DatasetItem, decisions) -> Dict[str, Any]:
    """The output line for one dataset item from the runner's decisions; RunnerError if none
    fits."""
    if isinstance(decisions, dict):
        # today's server answers a whole-output choice with one object; the contract makes it a
        # list of one decision at pointer ""
        decisions = [dict({"pointer": ""}, **decisions)]
    if not isinstance(decisions, list):
        raise RunnerError(f"expected a list of decisions, got {type(decisions).__name__}")
    matching = [d for d in decisions if isinstance(d, dict) and d.get("pointer") == item.pointer]
    if not matching:
        found = [d.get("pointer") for d in decisions if isinstance(d, dict)]
        raise RunnerError(f"no decision at pointer {json.dumps(item.pointer)} "
                          f"(decisions at: {json.dumps(found)})")
    out = dict(matching[0])
    out["pointer"] = item.pointer
    out["label"] = item.label
    out["id"] = item.id
    out.setdefault("probed_mass", None)
    for k, v in item.extra.items():
        out.setdefault(k, v)
    try:
        parse_decision(item.line, json.dumps(out))
    except DecisionError as e:
        raise RunnerError(f"the decision does not read as a labelled decision: {e.reason}"
                          + (f" (field '{e.field}')" if e.field else "")) from None
    return out


@dataclass
class CollectSummary:
    total: int
    already_done: int = 0
    written: int = 0
    failed: List[str] = field(default_factory=list)      # "id ...: reason"
    stopped: Optional[str] = None                          # why the run stopped early

    @property
    def ok(self) -> bool:
        return not self.failed and self.stopped is None

    def describe(self, out_path) -> str:
        remaining = self.total - self.already_done - self.written
        lines = [f"collect: {self.written} written, {self.already_done} already in {out_path}, "
                 f"{len(self.failed)} failed, {remaining} of {self.total} still to do"]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        for f in self.failed[:MAX_REPORTED]:
            lines.append(f"  {f}")
        if len(self.failed) > MAX_REPORTED:
            lines.append(f"  ... and {len(self.failed) - MAX_REPORTED} more")
        if remaining:
            lines.append("run the same command again to retry the rest (finished lines are kept)")
        return "\n".join(lines)


def collect(items: Sequence[DatasetItem], out_path: Union[str, Path], runner: Runner, *,
            progress_file: Optional[IO[str]] = None,
            progress: Optional[bool] = True) -> CollectSummary:
    """Run every item not yet in out_path; append one line per success (flushed at once).

    progress: True shows the tqdm bar (rate and ETA), None shows it only on a terminal, False
    hides it. KeyboardInterrupt propagates after the bar is closed; what was written stays.
    """
    from tqdm import tqdm

    done = read_done(out_path)
    todo = [it for it in items if it.key not in done]
    summary = CollectSummary(total=len(items), already_done=len(items) - len(todo))
    bar = tqdm(total=len(items), initial=summary.already_done, unit="req", desc="collect",
               file=progress_file if progress_file is not None else sys.stderr,
               disable=None if progress is None else not progress, dynamic_ncols=True,
               smoothing=0.1)
    try:
        with open(out_path, "a", encoding="utf-8") as out:
            for item in todo:
                try:
                    line = decision_line(item, runner(item.request()))
                except RunnerUnavailable as e:
                    summary.stopped = str(e)
                    break
                except RunnerError as e:
                    summary.failed.append(f"id {item.key} (line {item.line}): {e}")
                    bar.set_postfix(failed=len(summary.failed), refresh=False)
                else:
                    out.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
                    out.flush()
                    summary.written += 1
                bar.update(1)
    finally:
        bar.close()
    return summary


# --- runners -------------------------------------------------------------------------------

def chat_body(request: Mapping[str, Any], model: Optional[str] = None) -> Dict[str, Any]:
    """The OpenAI chat body for one dataset request, decisions asked for, greedy decoding (so
    `chosen` is the model's own pick and a rerun gives the same line)."""
    body: Dict[str, Any] = {"messages": request["messages"], "llamay_choice_logprobs": True,
                            "temperature": 0}
    if model:
        body["model"] = model
    if "schema" in request:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "collect", "schema": request["schema"],
                                                   "strict": True}}
    else:
        body["tools"] = request["tools"]
        body["tool_choice"] = "required"
    return body


def chat_completions_url(url: str) -> str:
    """Accept the server's base URL, its /v1, or the full endpoint."""
    url = url.rstrip("/")
    if url.endswith("/v1/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


def _error_text(response) -> str:
    try:
        data = response.json()
        err = data.get("error", data)
        msg = err.get("message") if isinstance(err, dict) else err
    except ValueError:
        msg = response.text[:200]
    return f"HTTP {response.status_code}: {msg}"


def url_runner(url: str, *, api_key: Optional[str] = None, model: Optional[str] = None,
               timeout: float = 300.0, client=None) -> Runner:
    """A runner that POSTs each request to a running llamay server's /v1/chat/completions.

    `client` (an httpx.Client) is for tests (httpx.MockTransport); by default one is made.
    """
    import httpx

    endpoint = chat_completions_url(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    http = client if client is not None else httpx.Client(timeout=timeout)

    def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
        try:
            response = http.post(endpoint, json=chat_body(request, model), headers=headers)
        except httpx.TransportError as e:
            raise RunnerUnavailable(f"cannot reach {endpoint}: {e}") from None
        if response.status_code != 200:
            raise RunnerError(_error_text(response))
        try:
            data = response.json()
        except ValueError:
            raise RunnerError("the response is not JSON") from None
        if not isinstance(data, dict) or "llamay_choice_logprobs" not in data:
            raise RunnerError("the response has no llamay_choice_logprobs")
        return data["llamay_choice_logprobs"]

    return run


# The in-process runner (-m MODEL.gguf) needs the server's decode loop with decision points;
# the server registers a factory here (model path or None for the default model -> Runner).
_in_process_factory: Optional[Callable[[Optional[str]], Runner]] = None


def register_in_process_runner(factory: Optional[Callable[[Optional[str]], Runner]]) -> None:
    global _in_process_factory
    _in_process_factory = factory


class InProcessUnavailable(RuntimeError):
    pass


def in_process_runner(model_path: Optional[str]) -> Runner:
    if _in_process_factory is None:
        raise InProcessUnavailable(
            "collecting in-process is not available yet (no model runner is registered with "
            "calibrate.collect.register_in_process_runner); start `llamay serve"
            + (f" -m {model_path}" if model_path else "") + "` and pass --url http://127.0.0.1:11435")
    return _in_process_factory(model_path)

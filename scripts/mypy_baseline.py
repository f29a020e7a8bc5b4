"""mypy over cengine's Python modules, held to a committed baseline that may only shrink.

server/ and calibrate/ are checked with no errors at all (a plain `mypy` from the repository
root: pyproject.toml's [tool.mypy]). The engine's own modules still carry errors (most of
them union-attr in the JSON Schema front end); this run counts them per file and compares the
counts with scripts/mypy_cengine_baseline.json:

    python scripts/mypy_baseline.py            # exit 1 if a file has more errors than its
                                               # baseline, or a file not in it has any
    python scripts/mypy_baseline.py --update   # write the current counts as the baseline

A count that went down passes and is reported: run --update and commit the file, so the
baseline follows the fix down. Raise a count only by editing the file by hand, where a reviewer
sees it (a module split moves its errors to new files: record them there and remove them from
the old one). CI (.ci/run) runs this after `mypy`.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "mypy_cengine_baseline.json"
# `path:line: error: message  [code]` (notes and the summary line are not errors)
ERROR = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: ")


def run_mypy() -> Counter:
    """Errors per file of `mypy cengine` under pyproject's configuration (the command line's
    path replaces its `files`; follow_imports does not apply to modules named there)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary",
                           "--no-pretty", "--no-color-output", "cengine"],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0, 1):       # 2: mypy itself failed (bad config, crash)
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"mypy failed (exit {proc.returncode})")
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            counts[m.group("path").replace("\\", "/")] += 1
    if proc.returncode == 1 and not counts:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit("mypy reported failure but no error line could be read")
    return counts


def compare(baseline: dict, counts: Counter) -> tuple:
    """(grown: [(path, was, now)], shrunk: [(path, was, now)])."""
    grown, shrunk = [], []
    for path in sorted(set(baseline) | set(counts)):
        was, now = baseline.get(path, 0), counts.get(path, 0)
        if now > was:
            grown.append((path, was, now))
        elif now < was:
            shrunk.append((path, was, now))
    return grown, shrunk


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true",
                    help="write the current per-file counts to the baseline file")
    args = ap.parse_args(argv)
    counts = run_mypy()
    if args.update:
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n",
                            encoding="utf-8")
        print(f"mypy baseline: {sum(counts.values())} errors in {len(counts)} files written "
              f"to {BASELINE.relative_to(ROOT)}")
        return 0
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    grown, shrunk = compare(baseline, counts)
    for path, was, now in grown:
        print(f"{path}: {now} mypy errors, baseline {was}" +
              (" (a file the baseline does not list)" if path not in baseline else ""))
    if grown:
        print(f"mypy baseline: errors grew in {len(grown)} file(s); `mypy {grown[0][0]}` "
              f"lists them. Fix them (the baseline only shrinks).")
        return 1
    if shrunk:
        total = sum(was - now for _, was, now in shrunk)
        print(f"mypy baseline: {total} fewer errors in "
              f"{', '.join(p for p, _, _ in shrunk)}; shrink the baseline with "
              f"`python scripts/mypy_baseline.py --update` and commit "
              f"{BASELINE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Writes tool-calls.jsonl, the cases of `llamay ladder` (docs/ladder.md): requests whose
right tool and right arguments are known, so both can be compared across the rungs.

Each case is a template of one tool filled with slot values; the label (the tool) and the
expected arguments come from the same values, so they are right by construction. Arguments
are short values copied from the request (a city, a number, an ISO date, an enum value): what
a small model can get right, and what quantisation erodes first. Four or five tools a case,
the right one among them; tool_choice "required". Seeded: rerunning writes the same file.
Run from the repository root: python testdata/ladder/make_cases.py
"""
from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 7
N = 40

STR = {"type": "string"}


def _fn(name, description, properties, required):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}


TOOLS = {
    "get_weather": _fn("get_weather", "Weather forecast for a city on a date.",
                       {"city": STR, "date": {"type": "string", "format": "date"}},
                       ["city", "date"]),
    "convert_currency": _fn("convert_currency", "Convert an amount between two currencies.",
                            {"amount": {"type": "number"},
                             "from": {"enum": ["USD", "EUR", "GBP", "JPY", "CHF"]},
                             "to": {"enum": ["USD", "EUR", "GBP", "JPY", "CHF"]}},
                            ["amount", "from", "to"]),
    "book_table": _fn("book_table", "Reserve a table at a restaurant.",
                      {"restaurant": STR, "party_size": {"type": "integer", "minimum": 1,
                                                         "maximum": 20}},
                      ["restaurant", "party_size"]),
    "set_timer": _fn("set_timer", "Start a countdown timer.",
                     {"minutes": {"type": "integer", "minimum": 1, "maximum": 600}},
                     ["minutes"]),
    "translate": _fn("translate", "Translate a word into a language.",
                     {"word": STR, "language": {"enum": ["French", "German", "Spanish",
                                                         "Italian"]}},
                     ["word", "language"]),
}

CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Tokyo", "Denver", "Madrid", "Nairobi"]
DATES = ["2026-03-14", "2026-07-01", "2026-11-20", "2027-01-05"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF"]
RESTAURANTS = ["Casa Verde", "Blue Door", "Sakura", "The Olive"]
WORDS = ["apple", "window", "river", "bread", "friend"]
LANGUAGES = ["French", "German", "Spanish", "Italian"]

TEMPLATES = {
    "get_weather": [
        ("What will the weather be in {city} on {date}?", lambda v: {"city": v["city"],
                                                                       "date": v["date"]}),
        ("Forecast for {city}, {date}, please.", lambda v: {"city": v["city"],
                                                             "date": v["date"]}),
    ],
    "convert_currency": [
        ("Convert {amount} {src} to {dst}.", lambda v: {"amount": v["amount"], "from": v["src"],
                                                        "to": v["dst"]}),
        ("How much is {amount} {src} in {dst}?", lambda v: {"amount": v["amount"],
                                                            "from": v["src"], "to": v["dst"]}),
    ],
    "book_table": [
        ("Book a table for {n} at {restaurant}.", lambda v: {"restaurant": v["restaurant"],
                                                             "party_size": v["n"]}),
        ("Reserve {restaurant} for {n} people.", lambda v: {"restaurant": v["restaurant"],
                                                            "party_size": v["n"]}),
    ],
    "set_timer": [
        ("Set a timer for {minutes} minutes.", lambda v: {"minutes": v["minutes"]}),
        ("Start a {minutes} minute countdown.", lambda v: {"minutes": v["minutes"]}),
    ],
    "translate": [
        ("Translate '{word}' into {language}.", lambda v: {"word": v["word"],
                                                           "language": v["language"]}),
        ("How do you say {word} in {language}?", lambda v: {"word": v["word"],
                                                             "language": v["language"]}),
    ],
}


def main() -> None:
    rng = random.Random(SEED)
    names = list(TOOLS)
    out = []
    for i in range(N):
        tool = names[i % len(names)]
        src, dst = rng.sample(CURRENCIES, 2)
        values = {"city": rng.choice(CITIES), "date": rng.choice(DATES),
                  "amount": rng.choice([20, 75, 150, 1200]), "src": src, "dst": dst,
                  "restaurant": rng.choice(RESTAURANTS), "n": rng.randint(2, 8),
                  "minutes": rng.choice([5, 10, 25, 45]), "word": rng.choice(WORDS),
                  "language": rng.choice(LANGUAGES)}
        text, args = rng.choice(TEMPLATES[tool])
        others = rng.sample([n for n in names if n != tool], rng.randint(3, 4))
        offered = others + [tool]
        rng.shuffle(offered)
        out.append({"id": f"ladder-{i + 1:03d}",
                    "messages": [{"role": "user", "content": text.format(**values)}],
                    "tools": [TOOLS[n] for n in offered], "tool_choice": "required",
                    "label": tool, "arguments": args(values)})
    path = Path(__file__).with_name("tool-calls.jsonl")
    path.write_text("".join(json.dumps(o) + "\n" for o in out), encoding="utf-8")
    print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
    main()

"""Writes the labelled DATASET.jsonl sets for `llamay calibrate collect` (docs/calibration.md):

  tool-routing.jsonl  requests with the right tool among four to six (pointer "tool")
  intents.jsonl       customer messages, an enum inside an object (pointer "/intent")

Each request is a template filled with slot values; the template belongs to one tool or one
intent, so the label is right by construction. Seeded: rerunning writes the same files.
Run from the repository root: python testdata/calibration/make_datasets.py
"""
from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 13
N_TOOL = 300
N_INTENT = 300

# --- tool routing ---------------------------------------------------------------------------


def _fn(name, description, properties, required):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


STR = {"type": "string"}
TOOLS = {
    "get_weather": _fn("get_weather", "Current weather or forecast for a city.",
                       {"city": STR, "date": STR}, ["city"]),
    "send_email": _fn("send_email", "Send an email to someone.",
                      {"to": STR, "subject": STR, "body": STR}, ["to", "subject", "body"]),
    "book_table": _fn("book_table", "Reserve a table at a restaurant.",
                      {"restaurant": STR, "party_size": {"type": "integer"}, "time": STR},
                      ["restaurant", "party_size", "time"]),
    "convert_currency": _fn("convert_currency", "Convert an amount between currencies.",
                            {"amount": {"type": "number"}, "from": STR, "to": STR},
                            ["amount", "from", "to"]),
    "set_reminder": _fn("set_reminder", "Set a reminder at a time.",
                        {"text": STR, "time": STR}, ["text", "time"]),
    "search_flights": _fn("search_flights", "Find flights between two cities on a date.",
                          {"origin": STR, "destination": STR, "date": STR},
                          ["origin", "destination", "date"]),
}

CITIES = ["Paris", "Lisbon", "Tokyo", "Nairobi", "Toronto", "Oslo", "Lima", "Seoul", "Cairo",
          "Perth"]
DAYS = ["today", "tomorrow", "on Friday", "next Monday", "this weekend", "on the 3rd"]
PEOPLE = ["Ana", "my manager", "Priya", "the landlord", "Tom", "my sister", "the team"]
TOPICS = ["the invoice", "Friday's meeting", "the project update", "the party", "my vacation"]
RESTAURANTS = ["Luigi's", "the sushi place on Main Street", "Casa Verde", "Blue Lotus", "the diner"]
TIMES = ["7pm", "noon", "8:30", "6 o'clock", "half past seven"]
CURRENCIES = ["dollars", "euros", "yen", "pounds", "Swiss francs", "rupees"]
CHORES = ["call the dentist", "water the plants", "pay rent", "pick up the kids", "take my pills"]

TOOL_TEMPLATES = {
    "get_weather": ["What's the weather like in {city} {day}?", "Will it rain in {city} {day}?",
                    "Do I need a jacket in {city} {day}?", "How hot will it be in {city} {day}?"],
    "send_email": ["Email {person} about {topic}.",
                   "Write to {person} and tell them about {topic}.",
                   "Send {person} a quick note about {topic}.",
                   "Can you drop {person} an email regarding {topic}?"],
    "book_table": ["Book a table for {n} at {restaurant} at {time}.",
                   "Reserve {restaurant} for {n} people, {time} {day}.",
                   "Get us a table at {restaurant} {day}, {n} of us, around {time}."],
    "convert_currency": ["How much is {amount} {cur1} in {cur2}?",
                         "Convert {amount} {cur1} to {cur2}.",
                         "What are {amount} {cur1} worth in {cur2} right now?"],
    "set_reminder": ["Remind me to {chore} at {time}.", "Don't let me forget to {chore} {day}.",
                     "Set a reminder {day} at {time} to {chore}."],
    "search_flights": ["Find me a flight from {city} to {city2} {day}.",
                       "Are there flights {city} to {city2} {day}?",
                       "I need to fly from {city} to {city2} {day}, what's available?"],
}

# --- intents --------------------------------------------------------------------------------

INTENTS = ["refund", "cancel", "track", "change_address", "billing", "product_question"]
INTENT_SCHEMA = {"type": "object",
                 "properties": {"intent": {"enum": INTENTS}, "urgent": {"type": "boolean"}},
                 "required": ["intent", "urgent"]}
SYSTEM = ("You sort customer messages for a shop. Answer with the intent of the message "
          "and whether it is urgent.")
PRODUCTS = ["blender", "running shoes", "phone case", "desk lamp", "coffee grinder", "backpack",
            "winter coat", "headphones"]
ORDERS = ["#4471", "#10293", "#5820", "#77314", "#2208"]
INTENT_TEMPLATES = {
    "refund": ["The {product} arrived broken, I want my money back.",
               "Please refund order {order}, the {product} doesn't work.",
               "I returned the {product} {ago} and still have no refund.",
               "Can I get a refund for the {product}? It's not what I expected."],
    "cancel": ["Please cancel order {order} before it ships.",
               "I changed my mind about the {product}, cancel it.",
               "Cancel my order {order}, I ordered the wrong {product}.",
               "Stop order {order}, I don't need the {product} anymore."],
    "track": ["Where is my {product}? I ordered it {ago}.",
              "Order {order} still hasn't arrived, where is it?",
              "Can you tell me when the {product} will be delivered?",
              "Has order {order} shipped yet?"],
    "change_address": ["I moved, please send order {order} to my new address.",
                       "Can you change the delivery address for the {product}?",
                       "Ship order {order} to my office instead of my home.",
                       "Wrong street on order {order}, can I update the address?"],
    "billing": ["I was charged twice for order {order}.",
                "Why is there an extra fee on my bill for the {product}?",
                "My card was charged but order {order} shows unpaid.",
                "The invoice for the {product} has the wrong amount."],
    "product_question": ["Is the {product} waterproof?",
                         "Does the {product} come in other colours?",
                         "What size {product} should I get?",
                         "How long does the {product} battery last?"],
}
AGO = ["two weeks ago", "last month", "ten days ago", "yesterday", "on Monday"]
URGENT_SUFFIX = [" It's urgent!", " Please hurry, I need this today.", " ASAP please."]


def _fill(template: str, rng: random.Random) -> str:
    city, city2 = rng.sample(CITIES, 2)
    cur1, cur2 = rng.sample(CURRENCIES, 2)
    return template.format(
        city=city, city2=city2, day=rng.choice(DAYS), person=rng.choice(PEOPLE),
        topic=rng.choice(TOPICS), n=rng.randint(2, 8), restaurant=rng.choice(RESTAURANTS),
        time=rng.choice(TIMES), amount=rng.choice([20, 75, 150, 1200, 9.5]), cur1=cur1, cur2=cur2,
        chore=rng.choice(CHORES), product=rng.choice(PRODUCTS), order=rng.choice(ORDERS),
        ago=rng.choice(AGO))


def _unique(rng: random.Random, n: int, make):
    seen, out = set(), []
    while len(out) < n:
        item = make()
        text = item["messages"][-1]["content"]
        if text in seen:
            continue
        seen.add(text)
        out.append(item)
    return out


def tool_routing(rng: random.Random, n: int = N_TOOL):
    names = list(TOOLS)

    def make():
        label = rng.choice(names)
        others = rng.sample([t for t in names if t != label], rng.randint(3, 5))
        offered = others + [label]
        rng.shuffle(offered)
        text = _fill(rng.choice(TOOL_TEMPLATES[label]), rng)
        return {"messages": [{"role": "user", "content": text}],
                "tools": [TOOLS[t] for t in offered], "pointer": "tool", "label": label,
                "task": "tool-routing", "n_tools": len(offered)}

    return [{"id": f"tool-{i:04d}", **item} for i, item in enumerate(_unique(rng, n, make), 1)]


def intents(rng: random.Random, n: int = N_INTENT):
    def make():
        label = rng.choice(INTENTS)
        urgent = rng.random() < 0.3
        text = _fill(rng.choice(INTENT_TEMPLATES[label]), rng)
        if urgent:
            text += rng.choice(URGENT_SUFFIX)
        return {"messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": text}],
                "schema": INTENT_SCHEMA, "pointer": "/intent", "label": label,
                "task": "intents", "urgent": urgent}

    return [{"id": f"intent-{i:04d}", **item} for i, item in enumerate(_unique(rng, n, make), 1)]


def write(path: Path, lines) -> None:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                    encoding="utf-8")


def main(out_dir: Path = Path(__file__).resolve().parent) -> None:
    rng = random.Random(SEED)
    write(out_dir / "tool-routing.jsonl", tool_routing(rng))
    write(out_dir / "intents.jsonl", intents(rng))


if __name__ == "__main__":
    main()

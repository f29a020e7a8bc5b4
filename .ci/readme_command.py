"""Print the command of README.md's fenced block under a `## <heading>`, exactly as written,
so that CI runs what a user would paste."""
import re
import sys
from pathlib import Path

heading = sys.argv[1]
text = Path(__file__).resolve().parent.parent.joinpath("README.md").read_text(encoding="utf-8")
section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
block = section and re.search(r"^```[^\n]*\n(.*?)^```", section.group(1), re.S | re.M)
if not block:
    sys.exit(f"README.md has no fenced command under '## {heading}'")
print(block.group(1).strip())

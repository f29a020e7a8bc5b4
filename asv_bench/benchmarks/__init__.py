"""asv benchmarks of cengine (run from the repo root: asv run --quick --python=same -E existing)."""
import sys
from pathlib import Path

# environment_type "existing" runs against the checkout; make cengine, tests and scripts importable
ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

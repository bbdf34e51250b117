"""Write docs/reference/rules.md from the one source of every rule's documentation.

The prose (What, Why, Fix, the other labelled paragraphs, the preamble, the group
introductions) is ``src/torchwheel/data/rules.toml``; names, severities, summaries and the
commands that fix a finding are ``src/torchwheel/rules/codes.py``. ``torchwheel rule TWnnn``
prints from the same two, so edit them, never docs/reference/rules.md, then run this script.
``tests/test_rules_doc.py`` fails when the page is stale.

Usage: python scripts/rules_doc.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchwheel.rules import explain

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "rules.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/reference/rules.md is stale")
    args = parser.parse_args()
    text = explain.rules_page()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print("docs/reference/rules.md is stale: run python scripts/rules_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

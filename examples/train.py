"""Trains the example models and writes each folder (model + settings) as a data scientist uploads it.

    .venv/bin/python examples/train.py [--out DIR] [case ...]

Cases: iris, diabetes, rent, reviews, digits, wine (all by default). Each writes DIR/model-<case>/
and a sample V2 request in DIR/requests/model-<case>.json.
"""

import argparse
import importlib
import sys
import warnings
from pathlib import Path

CASES = ["iris", "diabetes", "rent", "reviews", "digits", "wine"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "models")
    parser.add_argument("cases", nargs="*", metavar="case", help=f"one of {', '.join(CASES)}")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; choose from {', '.join(CASES)}")
    warnings.filterwarnings("ignore", category=UserWarning)
    for case in args.cases or CASES:
        module = importlib.import_module(f"cases.{case}")
        module.train(args.out)
        print(f"{module.NAME}: {args.out / module.NAME}", file=sys.stderr)


if __name__ == "__main__":
    main()

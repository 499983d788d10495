"""`scenec schema`: print the JSON Schema (draft 2020-12) of the YAML scene format.

Where it sits: compiler/, a subcommand of `scenec` (see cli.py); the schema itself is generated from
the proto descriptors by `scenec.schema.json_schema`. Editors use it through yaml-language-server.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    from scenec.schema.json_schema import json_schema

    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"scenec schema: cannot write '{args.output}': {e.strerror or e}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0

"""The layering rules of DESIGN.md, read from the source: imports flow schema ← compiler → runtime;
runtime imports only jax, numpy and itself (a generated step module needs nothing else); schema never
imports jax."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
STDLIB_OK = {"__future__", "dataclasses", "enum", "functools", "math", "typing", "json", "os", "pathlib",
             "sys", "tempfile", "importlib", "io", "zipfile", "re", "time", "collections", "itertools",
             "hashlib", "struct", "zlib", "base64", "string", "contextlib", "shutil", "subprocess",
             "argparse", "signal", "warnings", "abc", "copy", "numbers", "operator", "pickle", "textwrap",
             "threading", "queue", "types", "weakref", "heapq", "bisect", "datetime", "platform", "uuid",
             "logging", "inspect", "traceback", "random", "statistics", "fnmatch", "difflib", "array",
             "pkgutil", "gc", "concurrent"}


def imports_of(folder: str) -> dict[str, set[str]]:
    out = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:          # relative: stays inside its own layer
                    continue
                names.add(node.module)
        out[str(path.relative_to(ROOT))] = names
    return out


def top(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "scenec" else parts[0]


def test_runtime_imports_only_jax_numpy_and_itself():
    allowed = {"jax", "jaxlib", "numpy", "optax", "scenec.runtime", "gymnasium"} | STDLIB_OK
    for path, names in imports_of("runtime").items():
        bad = {n for n in names if top(n) not in allowed}
        assert not bad, f"{path} imports {sorted(bad)}"


def test_schema_never_imports_jax_compiler_or_runtime():
    for path, names in imports_of("schema").items():
        bad = {n for n in names if top(n) in {"jax", "jaxlib", "scenec.compiler", "scenec.runtime"}}
        assert not bad, f"{path} imports {sorted(bad)}"


def test_compiler_imports_jax_only_inside_functions():
    # `scenec check` must not pay for jax: module-level imports in compiler/ may not pull it in.
    for path in sorted((ROOT / "compiler").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            for n in names:
                assert top(n) not in {"jax", "jaxlib"}, f"{path.relative_to(ROOT)} imports {n} at module level"

"""The error catalogue: one minimal bad scene per diagnostic code, with its expected line:col.

Data-driven: every file in tests/catalogue/ named `<CODE>_<what>.<ext>` is a case. Its first lines
say what must be reported, `# expect: E204 12:9` (several allowed; `0:0` for problems about the
file as a whole; any comment style, e.g. `<!-- expect: E701 3:5 -->` in XML). A case that cannot
hold a comment (a missing file) keeps these lines in `<scene file>.expect`. Directives:
- `limit: NAME=VALUE` lowers a limit of `scenec.schema.load` for that case (so "file too large"
  needs no 16 MB file);
- `run: check|import|compile` picks what reads the case: `check()` (the default), the importers'
  `import_file()` (the default for .xml and .urdf; Brax .pbtxt cases say `run: import`), or
  `api.compile()` for what only lowering finds.
Other files there (meshes) are helpers.

Each case must produce every expected diagnostic and no unexpected error (so a case also proves
that one mistake gives one message). Every code in CODES must have a case.
"""

from __future__ import annotations

import importlib
import re

import pytest

from scenec.compiler.check import check
from scenec.schema import CODES

from conftest import CATALOGUE_DIR

# The module, not the function `scenec.schema.load` that shadows its name in the package.
load_module = importlib.import_module("scenec.schema.load")

CASE_NAME = re.compile(r"^([EW]\d{3})_\w+")
EXPECT = re.compile(r"\bexpect:\s*([EW]\d{3})\s+(\d+):(\d+)")
LIMIT = re.compile(r"\blimit:\s*(\w+)\s*=\s*(\d+)")
RUN = re.compile(r"\brun:\s*(\w+)")
HEADER_LINES = 12


def _header(path) -> list[str]:
    """The first lines (read as latin-1 so binary cases still have a readable header)."""
    return path.read_bytes().decode("latin-1").splitlines()[:HEADER_LINES]


def run_check(path):
    return check(path).diagnostics


def run_import(path):
    from scenec.compiler.importers import import_file
    return import_file(path).diagnostics


def run_compile(path):
    """Problems only `compile` finds (lowering needs jax); the catalogue runs JAX in 32-bit mode."""
    from scenec.compiler.api import compile
    from scenec.schema.diagnostics import SceneError
    try:
        compile(path, measure_jit=False)
    except SceneError as e:
        return e.diagnostics
    return ()


RUNNERS = {"check": run_check, "import": run_import, "compile": run_compile}
IMPORT_SUFFIXES = (".xml", ".urdf")


def _cases():
    cases = []
    for path in sorted(CATALOGUE_DIR.iterdir()):
        if not CASE_NAME.match(path.name):
            continue
        if path.name.endswith(".expect"):
            scene = path.with_name(path.name[: -len(".expect")])
            cases.append((scene, _header(path)))
        else:
            cases.append((path, _header(path)))
    return cases


CASES = _cases()


def _expectations(header):
    expected = [(m.group(1), int(m.group(2)), int(m.group(3)))
                for line in header for m in EXPECT.finditer(line)]
    limits = {m.group(1): int(m.group(2)) for line in header for m in LIMIT.finditer(line)}
    runs = [m.group(1) for line in header for m in RUN.finditer(line)]
    return expected, limits, runs


@pytest.mark.parametrize("scene,header", CASES, ids=[c[0].name for c in CASES])
def test_case(scene, header, monkeypatch):
    expected, limits, runs = _expectations(header)
    assert expected, f"{scene.name}: no '# expect: CODE LINE:COL' line"
    code = CASE_NAME.match(scene.name).group(1)
    assert code in {e[0] for e in expected}, f"{scene.name} does not expect its own code {code}"
    for name, value in limits.items():
        assert hasattr(load_module, name), f"unknown limit {name}"
        monkeypatch.setattr(load_module, name, value)
    runner = runs[0] if runs else "import" if scene.suffix in IMPORT_SUFFIXES else "check"
    assert runner in RUNNERS, f"{scene.name}: unknown runner {runner!r}"
    diagnostics = RUNNERS[runner](scene)
    got = [(d.code, d.span.line, d.span.col) for d in diagnostics]
    for want in expected:
        assert want in got, f"{scene.name}: expected {want}, got {got}"
    unexpected = [d for d in diagnostics
                  if d.is_error and (d.code, d.span.line, d.span.col) not in expected]
    assert not unexpected, f"{scene.name}: unexpected {[(d.code, str(d.span), d.message) for d in unexpected]}"
    for d in diagnostics:  # every reported code is in the catalogue
        assert d.code in CODES, f"{scene.name}: code {d.code} is not in CODES"


def test_every_code_has_a_case():
    covered = {CASE_NAME.match(scene.name).group(1) for scene, _ in CASES}
    missing = sorted(set(CODES) - covered)
    assert not missing, f"codes without a case in tests/catalogue/: {missing}"


def test_case_codes_are_known():
    unknown = sorted({CASE_NAME.match(s.name).group(1) for s, _ in CASES} - set(CODES))
    assert not unknown, f"catalogue cases for codes not in CODES: {unknown}"

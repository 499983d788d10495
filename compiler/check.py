"""`check(source)`: load + validate (+ the analysis passes), without jax.

Where it sits: compiler/, the function behind `scenec check` and the first half of
`scenec.compiler.compile`. Input: a path, YAML text or a `Scene` message; output: a `CheckResult`
with every diagnostic (sorted by file and position), the source texts for rendering, and the
`Loaded` scene for callers that go on compiling. Never raises for user errors.
"""

from __future__ import annotations

import dataclasses

from scenec.schema.diagnostics import Diagnostic, has_errors, sort_key
from scenec.schema.load import Loaded, load

from .task import check_task
from .validate import validate


@dataclasses.dataclass(frozen=True)
class CheckResult:
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]   # file name -> text, for rendering carets
    loaded: Loaded

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings allowed)."""
        return not has_errors(self.diagnostics)


def check(source, *, allow_outside: bool = False) -> CheckResult:
    loaded = load(source, allow_outside=allow_outside)
    diagnostics = list(loaded.diagnostics)
    diagnostics += validate(loaded)
    # Task expressions (compiler/task): parsed and type-checked against the scene's names.
    diagnostics += check_task(loaded)[0]
    return CheckResult(tuple(sorted(diagnostics, key=sort_key)), loaded.sources, loaded)

"""`check(source)`: load + validate (+ the analysis passes), without jax.

Where it sits: compiler/, the function behind `scenec check` and the first half of
`scenec.compiler.compile`. Input: a path, YAML text or a `Scene` message; output: a `CheckResult`
with every diagnostic (sorted by file and position), the source texts for rendering, and the
`Loaded` scene for callers that go on compiling. Never raises for user errors.
"""

from __future__ import annotations

import dataclasses

from scenec.schema.diagnostics import Diagnostic, has_errors, sort_key
from scenec.schema.load import Loaded



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
    """Every problem of a scene that needs no jax: reading, validation, the task's expressions, and
    the analysis passes (mass properties, fusion, collision pairs and kernels) — see api.analyse."""
    from .api import analyse

    analysis = analyse(source, allow_outside=allow_outside)
    return CheckResult(tuple(sorted(analysis.diagnostics, key=sort_key)), analysis.sources,
                       analysis.loaded)

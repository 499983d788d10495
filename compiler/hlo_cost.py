"""XLA's cost analysis with loops counted as many times as they run.

Where it sits: compiler/, used by `scenec bench` (cmd_bench.py). XLA's `cost_analysis()` of a compiled
executable counts the body of every while loop once, whatever its trip count; scenec's step is a scan
over substeps around scans over solver iterations and constraint blocks (and, for a large batch, a map
over tiles), so the plain figure undercounts a control step by one to three orders of magnitude.

Here each while loop's body is costed on its own (the optimised module re-parsed with that body as the
entry computation) and weighted by the trip count XLA recorded for the loop (`known_trip_count`):

    weighted(C) = cost(C) + Σ over loops w in C of (trip(w)·weighted(body(w)) − cost(body(w)))

since cost(C) already includes each body once. A loop without a known trip count counts once, and
the result says how many such loops there were. Loops can sit inside other computations than loop
bodies, and are weighted there too: a `call` (XLA's CPU backend hoists a small loop into one, see
runtime/__init__.py) counts its computation once, so it adds weighted − cost of that computation; a
`conditional` counts the largest of its branches, property by property (XLA's HandleConditional), so
it adds the largest weighted branch less the largest plain one (the step's substep loop is a cond on
its counter on a CPU: runtime/step.py, `OUTPUTS_IN_LOOP`).

Where the device's client has no cost analysis (jax's GPU plugin through the PJRT C API answers
UNIMPLEMENTED), the same optimised module is costed by XLA's CPU cost model instead, and the result
says so (`cost_model: "cpu"`): the device's fusions and loops as they are, each instruction counted as
the CPU model counts it, library calls (cuBLAS) as zero.
"""

from __future__ import annotations

import re

_COMPUTATION = re.compile(r"^(ENTRY )?%([\w.\-]+) \(")
_WHILE = re.compile(r"\bwhile\(.*?body=%([\w.\-]+)")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_CALL = re.compile(r"(?<![\w-])call\(.*?to_apply=%([\w.\-]+)")
_BRANCHES = re.compile(r"\bconditional\(.*?(?:branch_computations=\{([^}]*)\}"
                       r"|true_computation=%([\w.\-]+), false_computation=%([\w.\-]+))")
KEYS = ("flops", "bytes accessed", "transcendentals")


def _computations(text: str) -> tuple[dict[str, list[str]], str]:
    """Each computation's instruction lines, and the entry computation's name."""
    comps: dict[str, list[str]] = {}
    entry, current = "", None
    for line in text.splitlines():
        m = _COMPUTATION.match(line)
        if m:
            current = m.group(2)
            comps[current] = []
            if m.group(1):
                entry = current
        elif line.startswith("}"):
            current = None
        elif current is not None:
            comps[current].append(line)
    return comps, entry


def _with_entry(text: str, name: str) -> str:
    """The module text with computation `name` as its entry."""
    out = []
    for line in text.splitlines():
        if line.startswith("HloModule"):
            line = "HloModule cost"                     # its layouts and schedule are the old entry's
        elif line.startswith("ENTRY "):
            line = line[len("ENTRY "):]
        elif line.startswith(f"%{name} ("):
            line = "ENTRY " + line
        out.append(line)
    return "\n".join(out)


def loop_weighted_cost(compiled) -> dict:
    """{flops, bytes accessed, transcendentals} of one run of a compiled jax executable (`.lower(…)
    .compile()`), loops weighted by their trip counts; `unknown_trip_counts` counts the loops taken
    once because XLA did not record how often they run."""
    import jax
    import jaxlib._hlo as hlo
    from jax._src.lib import xla_client

    text = compiled.as_text()
    comps, entry = _computations(text)
    device = jax.devices()[0]
    clients = [device.client] + ([jax.devices("cpu")[0].client] if device.platform != "cpu" else [])
    plain: dict[str, dict] = {}
    unknown = 0

    def cost(name: str) -> dict:
        if name not in plain:
            module = hlo.hlo_module_from_text(_with_entry(text, name))
            try:
                c = xla_client._xla.hlo_module_cost_analysis(clients[0], module)
            except Exception as e:  # noqa: BLE001  (jax raises its runtime error type)
                if len(clients) == 1 or "UNIMPLEMENTED" not in str(e):
                    raise
                clients.pop(0)         # the accelerator's client has none: XLA's CPU cost model
                c = xla_client._xla.hlo_module_cost_analysis(clients[0], module)
            plain[name] = {k: float(c.get(k, 0.0)) for k in KEYS}
        return plain[name]

    def weighted(name: str) -> dict:
        nonlocal unknown
        total = dict(cost(name))
        for line in comps.get(name, ()):
            w = _WHILE.search(line)
            if not w:
                called = _CALL.search(line)
                branches = None if called else _BRANCHES.search(line)
                if called:
                    inner, once = weighted(called.group(1)), cost(called.group(1))
                    for k in KEYS:
                        total[k] += inner[k] - once[k]
                elif branches:
                    names = ([b.strip().lstrip("%") for b in branches.group(1).split(",")] if branches.group(1)
                             else [branches.group(2), branches.group(3)])
                    inner, once = [weighted(b) for b in names], [cost(b) for b in names]
                    for k in KEYS:
                        total[k] += max(x[k] for x in inner) - max(x[k] for x in once)
                continue
            trip = _TRIP.search(line)
            if trip is None:
                unknown += 1
                continue
            n, body = int(trip.group(1)), w.group(1)
            inner, once = weighted(body), cost(body)
            for k in KEYS:
                total[k] += n * inner[k] - once[k]
        return total

    out = weighted(entry)
    out["unknown_trip_counts"] = unknown
    out["cost_model"] = clients[0].platform
    return out

"""Task expressions: syntax tree → typed tree with names resolved to scene entities, or diagnostics.

Where it sits: compiler/task, second step (parse.py → here → lower.py). Runs at `scenec check` time
on the validated `Scene` message (no IR, no jax): it knows the scene's bodies, joints and their kinds,
actuators, targets and parameters, and so every type and every vector length. It reports unknown
names, type and length mismatches and bad terms as E6xx diagnostics located at the offending token
inside the expression, and collects every problem before it stops.

The typed tree is plain tuples (see `Typed.tree`); leaves still name entities ("body", "torso") and
`lower.py` replaces those names by indices of the compiled model.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from scenec.schema import scene_pb2
from scenec.schema.diagnostics import Diagnostic, Severity, Span
from scenec.schema.names import choices, did_you_mean
from scenec.schema.source_map import LineIndex
from scenec.schema.yaml_tree import Document, YScalar

from .parse import MAX_DEPTH, Node, ParseError, parse

# coordinates per joint kind (scene.proto JointKind: hinge, slide, ball, free, fixed)
KIND_NQ = {0: 1, 1: 1, 2: 4, 3: 7, 4: 0}
KIND_NV = {0: 1, 1: 1, 2: 3, 3: 6, 4: 0}
FIXED = 4

SECTIONS = (("observations", "observation"), ("reward", "reward"), ("termination", "termination"))


@dataclasses.dataclass(frozen=True, slots=True)
class Type:
    """boolean: True for conditions; n: None for a single value, else the vector length."""

    boolean: bool
    n: int | None

    def describe(self) -> str:
        base = "boolean" if self.boolean else "number"
        return base if self.n is None else f"vector({self.n}) of {base}s"

    @property
    def size(self) -> int:
        return 1 if self.n is None else self.n


NUMBER = Type(False, None)
BOOL = Type(True, None)


def vec(n: int, boolean: bool = False) -> Type:
    return Type(boolean, n)


@dataclasses.dataclass(frozen=True, slots=True)
class Typed:
    """A checked expression: its type and its tree.

    tree: nested tuples. Leaves: ("const", value) with value a float, bool or tuple of floats;
    ("body", field, prev, body_name); ("joint", "q"|"qd", prev, joint_name); ("all", "q"|"qd", prev);
    ("action",); ("actuator", name); ("contact_force_all", prev); ("com", "pos"|"vel", prev);
    ("target", prev, name); ("time", prev); ("dt",). Operations: ("neg", a), ("not", a),
    ("bin", op, a, b) with op in + - * / ^ < <= > >= == != and or; ("call", fn, (args...));
    ("index", a, i); ("slice", a, i, j); ("vec", (items...)).
    """

    type: Type
    tree: tuple


# --- what the scene declares --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SceneNames:
    """The names a task can use, from the Scene message (authored order)."""

    bodies: tuple            # authored bodies + "world"
    joints: dict             # name -> JointKind (int)
    actuators: tuple
    targets: tuple
    parameters: dict         # name -> SI value
    nq: int
    nv: int
    nmoving: int             # bodies with a moving joint (the model's bodies other than the world)

    @classmethod
    def of(cls, scene: scene_pb2.Scene) -> "SceneNames":
        joints = {j.name: j.kind for j in scene.joints if j.name}
        moving = {j.child for j in scene.joints if j.kind != FIXED and j.child}
        return cls(
            bodies=tuple(b.name for b in scene.bodies if b.name) + ("world",),
            joints=joints,
            actuators=tuple(a.name for a in scene.actuators),
            targets=tuple(t.name for t in scene.task.targets if t.name),
            parameters={p.name: p.value for p in scene.parameters if p.name},
            nq=sum(KIND_NQ.get(k, 0) for k in joints.values()),
            nv=sum(KIND_NV.get(k, 0) for k in joints.values()),
            nmoving=len(moving),
        )


BODY_FIELDS = {"pos": 3, "quat": 4, "vel": 3, "angvel": 3, "xaxis": 3, "yaxis": 3, "zaxis": 3,
               "contact_force": 3}
COM_FIELDS = ("pos", "vel")
# Roots that describe the state (so `prev.` applies to them); the others are inputs or constants.
STATE_ROOTS = ("body", "joint", "q", "qd", "contact_force", "com", "target", "time")
ROOTS = STATE_ROOTS + ("action", "dt", "param", "prev", "pi")
COMPONENTS = {"x": 0, "y": 1, "z": 2}


# --- checker values -----------------------------------------------------------------------------


class _Bad:
    """A subexpression that already failed (reported once); anything built on it fails silently."""


BAD = _Bad()


@dataclasses.dataclass(frozen=True)
class Namespace:
    """A name that is not a value by itself: `body`, `body.torso`, `joint`, `prev`, `com`, ..."""

    what: str                              # words for messages: "body 'torso'", "'body'"
    member: Callable                       # (name, node, name_span) -> value | BAD
    fields: tuple                          # member names, for suggestions
    by_string: bool = False                # members may be written ["name"]


@dataclasses.dataclass(frozen=True)
class Value:
    """A typed value; `member` (when not None) resolves `value.name` before component access."""

    typed: Typed
    member: Callable | None = None
    fields: tuple = ()


class _Reject(Exception):
    """Raised inside the checker for the first problem of a node; caught where it is reported."""

    def __init__(self, code, message, start, end, hint=""):
        super().__init__(message)
        self.code, self.message, self.start, self.end, self.hint = code, message, start, end, hint


# --- functions ----------------------------------------------------------------------------------

ELEMENTWISE = ("abs", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "square", "sign")
FUNCTIONS = {  # name -> (min args, max args or None)
    **{f: (1, 1) for f in ELEMENTWISE},
    "atan2": (2, 2), "min": (1, None), "max": (1, None), "clip": (3, 3), "where": (3, 3),
    "sum": (1, 1), "mean": (1, 1), "norm": (1, 1), "dot": (2, 2), "cross": (2, 2),
    "any": (1, 1), "all": (1, 1), "to_local": (2, 2), "to_world": (2, 2),
}


def _arity_words(lo: int, hi: int | None) -> str:
    if hi == lo:
        return f"{lo} argument" + ("s" if lo != 1 else "")
    if hi is None:
        return f"at least {lo} argument" + ("s" if lo != 1 else "")
    return f"{lo} to {hi} arguments"


class Checker:
    """Checks the expressions of one scene's task. `report` receives (code, message, start, end, hint)
    for the expression being checked."""

    def __init__(self, names: SceneNames):
        self.names = names
        self.problems: list[tuple] = []
        self.used_parameters: set[str] = set()

    # -- entry ------------------------------------------------------------------------------------

    def check(self, node: Node) -> Typed | None:
        self.problems = []
        value = self.value(node, 0)
        if value is BAD or self.problems:
            return None
        return value.typed

    def report(self, code, message, start, end, hint=""):
        self.problems.append((code, message, start, end, hint))

    def value(self, node: Node, depth: int):
        """Evaluate `node` to a Value (reporting a Namespace used as a value)."""
        v = self.eval(node, depth)
        if isinstance(v, Namespace):
            self.report("E603", f"{v.what} is not a value; name one of its fields", node.start, node.end,
                        f"for example {node_text_hint(v)}")
            return BAD
        return v

    def eval(self, node: Node, depth: int):
        if depth > 4 * MAX_DEPTH:
            self.report("E611", "the expression nests too deeply", node.start, node.end)
            return BAD
        try:
            return getattr(self, "_" + node.kind)(node, depth + 1)
        except _Reject as r:
            self.report(r.code, r.message, r.start, r.end, r.hint)
            return BAD

    # -- leaves -----------------------------------------------------------------------------------

    def _number(self, node, depth):
        return Value(Typed(NUMBER, ("const", node.value)))

    def _true(self, node, depth):
        return Value(Typed(BOOL, ("const", True)))

    def _false(self, node, depth):
        return Value(Typed(BOOL, ("const", False)))

    def _string(self, node, depth):
        raise _Reject("E604", "a quoted name is only allowed in brackets after a namespace, as in "
                      "body[\"left leg\"]", node.start, node.end)

    def _name(self, node, depth):
        return self.root(node.value, node.start, node.end, prev=False)

    def root(self, name: str, start: int, end: int, prev: bool):
        n = self.names
        if prev and name in ROOTS and name not in STATE_ROOTS and name not in ("param", "pi"):
            raise _Reject("E603", f"prev.{name} does not exist: 'prev' applies to the state "
                          f"({', '.join(STATE_ROOTS)})", start, end)
        if name == "body":
            return Namespace("'body'", lambda m, s, e: self.body(m, s, e, prev), n.bodies, True)
        if name == "joint":
            return Namespace("'joint'", lambda m, s, e: self.joint(m, s, e, prev), tuple(n.joints), True)
        if name == "target":
            return Namespace("'target'", lambda m, s, e: self.target(m, s, e, prev), n.targets, True)
        if name == "com":
            return Namespace("'com'", lambda m, s, e: self.com(m, s, e, prev), COM_FIELDS)
        if name == "param":
            return Namespace("'param'", self.param, tuple(n.parameters), True)
        if name == "prev":
            return Namespace("'prev'", lambda m, s, e: self.root(m, s, e, True), STATE_ROOTS)
        if name in ("q", "qd"):
            size = n.nq if name == "q" else n.nv
            return Value(Typed(vec(size), ("all", name, prev)))
        if name == "action":
            return Value(Typed(vec(len(n.actuators)), ("action",)), self.actuator, n.actuators)
        if name == "contact_force":
            return Value(Typed(vec(3 * n.nmoving), ("contact_force_all", prev)),
                         lambda m, s, e: self.body_field(m, "contact_force", s, e, prev), n.bodies)
        if name == "time":
            return Value(Typed(NUMBER, ("time", prev)))
        if name == "dt":
            return Value(Typed(NUMBER, ("dt",)))
        if name == "pi":
            return Value(Typed(NUMBER, ("const", 3.141592653589793)))
        if name in n.parameters:
            self.used_parameters.add(name)
            return Value(Typed(NUMBER, ("const", float(n.parameters[name]))))
        hint = ""
        for kind, pool in (("body", n.bodies), ("joint", n.joints), ("target", n.targets)):
            if name in pool:
                hint = f"'{name}' is a {kind}: write {kind}.{name}"
                break
        if not hint and name in n.actuators:
            hint = f"'{name}' is an actuator: write action.{name}"
        if not hint and name in FUNCTIONS:
            hint = f"'{name}' is a function: call it like {name}(x)"
        if not hint:
            hint = did_you_mean(name, list(ROOTS) + list(n.parameters) + ["true", "false"])
        raise _Reject("E602", f"unknown name '{name}'", start, end,
                      hint or "names start with body, joint, q, qd, action, contact_force, com, "
                              "target, time, dt, param or prev, or are parameters")

    def _unknown(self, kind: str, name: str, pool, start, end):
        hint = did_you_mean(name, pool) or choices(pool)
        raise _Reject("E602", f"unknown {kind} '{name}'", start, end,
                      hint if hint.startswith("did") else f"{kind}s: {hint}")

    def body(self, name, start, end, prev):
        if name not in self.names.bodies:
            self._unknown("body", name, self.names.bodies, start, end)
        return Namespace(f"body '{name}'", lambda m, s, e: self.body_field(name, m, s, e, prev),
                         tuple(BODY_FIELDS))

    def body_field(self, body, field, start, end, prev):
        if body not in self.names.bodies:  # contact_force.B comes here directly
            self._unknown("body", body, self.names.bodies, start, end)
        if field not in BODY_FIELDS:
            raise _Reject("E603", f"a body has no field '{field}'", start, end,
                          did_you_mean(field, BODY_FIELDS) or "fields: " + ", ".join(BODY_FIELDS))
        return Value(Typed(vec(BODY_FIELDS[field]), ("body", field, prev, body)))

    def joint(self, name, start, end, prev):
        if name not in self.names.joints:
            self._unknown("joint", name, tuple(self.names.joints), start, end)
        kind = self.names.joints[name]

        def field(m, s, e):
            if m not in ("q", "qd"):
                raise _Reject("E603", f"a joint has no field '{m}'", s, e,
                              did_you_mean(m, ("q", "qd")) or "fields: q, qd")
            if kind == FIXED:
                raise _Reject("E603", f"joint '{name}' is fixed: it has no {m}", s, e)
            size = (KIND_NQ if m == "q" else KIND_NV)[kind]
            return Value(Typed(NUMBER if size == 1 else vec(size), ("joint", m, prev, name)))

        return Namespace(f"joint '{name}'", field, ("q", "qd"))

    def target(self, name, start, end, prev):
        if name not in self.names.targets:
            self._unknown("target", name, self.names.targets, start, end)

        def field(m, s, e):
            if m != "pos":
                raise _Reject("E603", f"a target has no field '{m}'", s, e, "fields: pos")
            return Value(Typed(vec(3), ("target", prev, name)))

        return Namespace(f"target '{name}'", field, ("pos",))

    def com(self, m, s, e, prev):
        if m not in COM_FIELDS:
            raise _Reject("E603", f"'com' has no field '{m}'", s, e,
                          did_you_mean(m, COM_FIELDS) or "fields: pos, vel")
        return Value(Typed(vec(3), ("com", m, prev)))

    def param(self, m, s, e):
        if m not in self.names.parameters:
            self._unknown("parameter", m, tuple(self.names.parameters), s, e)
        self.used_parameters.add(m)
        return Value(Typed(NUMBER, ("const", float(self.names.parameters[m]))))

    def actuator(self, m, s, e):
        if m not in self.names.actuators:
            if m in COMPONENTS:
                return None  # action.x: a component, handled by the caller
            self._unknown("actuator", m, self.names.actuators, s, e)
        return Value(Typed(NUMBER, ("actuator", m)))

    # -- member access ----------------------------------------------------------------------------

    def _attr(self, node, depth):
        base = self.eval(node.children[0], depth)
        if base is BAD:
            return BAD
        name, s, e = node.value, node.name_start, node.name_end
        if isinstance(base, Namespace):
            return base.member(name, s, e)
        if base.member is not None and (name in base.fields or name not in COMPONENTS):
            found = base.member(name, s, e)
            if found is not None:
                return found
        if name in COMPONENTS:
            i = COMPONENTS[name]
            t = base.typed.type
            if t.n is None or i >= t.n:
                raise _Reject("E607", f"'.{name}' needs a vector of at least {i + 1} entries, not a "
                              f"{t.describe()}", s, e)
            return Value(Typed(Type(t.boolean, None), ("index", base.typed.tree, i)))
        raise _Reject("E603", f"a {base.typed.type.describe()} has no field '{name}'", s, e,
                      "components are .x, .y, .z; other entries are v[i]")

    def _item(self, node, depth):
        base = self.eval(node.children[0], depth)
        sub = node.children[1]
        if base is BAD:
            return BAD
        if isinstance(base, Namespace):
            key = sub.children[0] if sub.kind == "index" else None
            if key is None or key.kind != "string":
                raise _Reject("E607", f"{base.what} takes a quoted name in brackets, as in "
                              f"[\"name\"]", sub.start, sub.end)
            return base.member(key.value, key.start, key.end)
        t = base.typed.type
        if t.n is None:
            raise _Reject("E607", f"only vectors can be indexed, not a {t.describe()}",
                          node.children[0].start, node.children[0].end)
        if sub.kind == "index":
            i = self.const_int(sub.children[0])
            if not -t.n <= i < t.n:
                raise _Reject("E607", f"index {i} is outside a vector of {t.n} entries",
                              sub.start, sub.end, f"indices run from 0 to {t.n - 1} (or -{t.n} to -1)")
            return Value(Typed(Type(t.boolean, None), ("index", base.typed.tree, i % t.n)))
        lo_node, hi_node = sub.children
        lo = 0 if lo_node is None else self.const_int(lo_node)
        hi = t.n if hi_node is None else self.const_int(hi_node)
        lo_abs, hi_abs = (lo + t.n if lo < 0 else lo), (hi + t.n if hi < 0 else hi)
        if not (0 <= lo_abs <= t.n and 0 <= hi_abs <= t.n) or hi_abs <= lo_abs:
            raise _Reject("E607", f"slice [{lo}:{hi}] of a vector of {t.n} entries is empty or out of "
                          "range", sub.start, sub.end)
        return Value(Typed(Type(t.boolean, hi_abs - lo_abs), ("slice", base.typed.tree, lo_abs, hi_abs)))

    def const_int(self, node: Node) -> int:
        sign = 1
        inner = node
        while inner.kind in ("neg", "pos"):
            sign = -sign if inner.kind == "neg" else sign
            inner = inner.children[0]
        if inner.kind != "number" or inner.value != int(inner.value):
            raise _Reject("E607", "an index or slice bound must be a constant integer",
                          node.start, node.end)
        return sign * int(inner.value)

    # -- operators --------------------------------------------------------------------------------

    def numeric(self, node, depth) -> Typed | None:
        v = self.value(node, depth)
        if v is BAD:
            return None
        if v.typed.type.boolean:
            self.report("E604", f"expected a number, got a {v.typed.type.describe()}", node.start,
                        node.end, "turn a condition into a number with where(c, 1, 0)")
            return None
        return v.typed

    def boolean(self, node, depth) -> Typed | None:
        v = self.value(node, depth)
        if v is BAD:
            return None
        if not v.typed.type.boolean:
            self.report("E604", f"expected a boolean, got a {v.typed.type.describe()}", node.start,
                        node.end, "compare it, e.g. x > 0")
            return None
        return v.typed

    def broadcast(self, parts, nodes, what: str) -> int | None:
        """The common vector length of `parts` (None for all-scalar); reports E605."""
        n = None
        first = None
        for typed, node in zip(parts, nodes):
            m = typed.type.n
            if m is None:
                continue
            if n is None:
                n, first = m, typed
            elif m != n:
                raise _Reject("E605", f"{what} a {first.type.describe()} and a {typed.type.describe()}",
                              node.start, node.end, "vectors combine only with vectors of the same "
                              "length (or with single numbers)")
        return n

    def _neg(self, node, depth):
        a = self.numeric(node.children[0], depth)
        return BAD if a is None else Value(Typed(a.type, ("neg", a.tree)))

    def _pos(self, node, depth):
        a = self.numeric(node.children[0], depth)
        return BAD if a is None else Value(a)

    def _not_(self, node, depth):
        a = self.boolean(node.children[0], depth)
        return BAD if a is None else Value(Typed(a.type, ("not", a.tree)))

    def _binary(self, node, depth):
        a = self.numeric(node.children[0], depth)
        b = self.numeric(node.children[1], depth)
        if a is None or b is None:
            return BAD
        verb = {"+": "cannot add", "-": "cannot subtract", "*": "cannot multiply", "/": "cannot divide"}
        n = self.broadcast((a, b), node.children, verb[node.value])
        return Value(Typed(Type(False, n), ("bin", node.value, a.tree, b.tree)))

    def _pow(self, node, depth):
        a = self.numeric(node.children[0], depth)
        b = self.numeric(node.children[1], depth)
        if a is None or b is None:
            return BAD
        n = self.broadcast((a, b), node.children, "cannot raise")
        return Value(Typed(Type(False, n), ("bin", "^", a.tree, b.tree)))

    def _logic(self, node, depth, op):
        a = self.boolean(node.children[0], depth)
        b = self.boolean(node.children[1], depth)
        if a is None or b is None:
            return BAD
        n = self.broadcast((a, b), node.children, f"cannot '{op}'")
        return Value(Typed(Type(True, n), ("bin", op, a.tree, b.tree)))

    def _and_(self, node, depth):
        return self._logic(node, depth, "and")

    def _or_(self, node, depth):
        return self._logic(node, depth, "or")

    def _compare(self, node, depth):
        values = [self.value(c, depth) for c in node.children]
        if any(v is BAD for v in values):
            return BAD
        typed = [v.typed for v in values]
        result = None
        n_all = None
        for k, op in enumerate(node.value):
            a, b = typed[k], typed[k + 1]
            na, nb = node.children[k], node.children[k + 1]
            if op in ("==", "!="):
                if a.type.boolean != b.type.boolean:
                    raise _Reject("E604", f"cannot compare a {a.type.describe()} with a "
                                  f"{b.type.describe()}", nb.start, nb.end)
            else:
                for t, nd in ((a, na), (b, nb)):
                    if t.type.boolean:
                        raise _Reject("E604", f"'{op}' compares numbers, not a {t.type.describe()}",
                                      nd.start, nd.end)
            n = self.broadcast((a, b), (na, nb), "cannot compare")
            if n_all is not None and n is not None and n != n_all:
                raise _Reject("E605", f"the comparisons of a chain give vectors of {n_all} and {n} "
                              "entries", nb.start, nb.end)
            n_all = n if n is not None else n_all
            part = ("bin", op, a.tree, b.tree)
            result = part if result is None else ("bin", "and", result, part)
        return Value(Typed(Type(True, n_all), result))

    def _vector(self, node, depth):
        if not node.children:
            raise _Reject("E605", "an empty vector", node.start, node.end)
        items = [self.value(c, depth) for c in node.children]
        if any(v is BAD for v in items):
            return BAD
        kinds = {v.typed.type.boolean for v in items}
        if len(kinds) > 1:
            raise _Reject("E604", "a vector mixes numbers and booleans", node.start, node.end)
        size = sum(v.typed.type.size for v in items)
        return Value(Typed(Type(kinds.pop(), size), ("vec", tuple(v.typed.tree for v in items))))

    # -- calls ------------------------------------------------------------------------------------

    def _call(self, node, depth):
        fn = node.value
        if fn not in FUNCTIONS:
            hint = did_you_mean(fn, FUNCTIONS) or "functions: " + ", ".join(sorted(FUNCTIONS))
            raise _Reject("E606", f"unknown function '{fn}'", node.name_start, node.name_end, hint)
        lo, hi = FUNCTIONS[fn]
        args = node.children
        if len(args) < lo or (hi is not None and len(args) > hi):
            raise _Reject("E606", f"{fn}() takes {_arity_words(lo, hi)}, got {len(args)}",
                          node.start, node.end)
        if fn in ("any", "all"):
            a = self.boolean(args[0], depth)
            return BAD if a is None else Value(Typed(BOOL, ("call", fn, (a.tree,))))
        if fn == "where":
            c = self.boolean(args[0], depth)
            x, y = self.value(args[1], depth), self.value(args[2], depth)
            if c is None or x is BAD or y is BAD:
                return BAD
            if x.typed.type.boolean != y.typed.type.boolean:
                raise _Reject("E604", f"where() chooses between a {x.typed.type.describe()} and a "
                              f"{y.typed.type.describe()}", args[2].start, args[2].end)
            n = self.broadcast((c, x.typed, y.typed), args, "where() cannot combine")
            return Value(Typed(Type(x.typed.type.boolean, n),
                               ("call", fn, (c.tree, x.typed.tree, y.typed.tree))))
        parts = [self.numeric(a, depth) for a in args]
        if any(p is None for p in parts):
            return BAD
        if fn in ELEMENTWISE:
            return Value(Typed(parts[0].type, ("call", fn, (parts[0].tree,))))
        trees = tuple(p.tree for p in parts)
        if fn in ("sum", "mean", "norm") or (fn in ("min", "max") and len(parts) == 1):
            return Value(Typed(NUMBER, ("call", fn, trees)))
        if fn in ("atan2", "min", "max", "clip"):
            n = self.broadcast(parts, args, f"{fn}() cannot combine")
            return Value(Typed(Type(False, n), ("call", fn, trees)))
        if fn == "dot":
            self.broadcast(parts, args, "dot() cannot combine")
            return Value(Typed(NUMBER, ("call", fn, trees)))
        if fn == "cross":
            for p, a in zip(parts, args):
                if p.type.n != 3:
                    raise _Reject("E605", f"cross() takes 3-vectors, not a {p.type.describe()}",
                                  a.start, a.end)
            return Value(Typed(vec(3), ("call", fn, trees)))
        if fn in ("to_local", "to_world"):
            for p, a, want in zip(parts, args, (4, 3)):
                if p.type.n != want:
                    what = "a quaternion, vector(4)" if want == 4 else "a 3-vector"
                    raise _Reject("E605", f"{fn}() takes {what} here, not a {p.type.describe()}",
                                  a.start, a.end)
            return Value(Typed(vec(3), ("call", fn, trees)))
        raise AssertionError(f"function {fn} has no typing rule")


def node_text_hint(ns: Namespace) -> str:
    """An example of a member, for 'is not a value' messages."""
    if ns.what.startswith("body '"):
        return f"body.{ns.what[6:-1]}.pos"
    if ns.what.startswith("joint '"):
        return f"joint.{ns.what[7:-1]}.q"
    examples = {"'body'": "body.torso.pos", "'joint'": "joint.hip.q", "'target'": "target.goal.pos",
                "'com'": "com.pos", "'prev'": "prev.body.torso.pos", "'param'": "param.leg"}
    return examples.get(ns.what, f"{ns.what.strip(chr(39))}.pos")


# --- the task of a scene ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CheckedTerm:
    name: str
    typed: Typed
    weight: float
    span: Span


@dataclasses.dataclass(frozen=True)
class CheckedTask:
    """Every term of a task, checked (`None` where a term failed)."""

    observations: tuple      # CheckedTerm
    reward: tuple
    termination: tuple
    names: SceneNames
    used_parameters: frozenset = frozenset()


class _Spans:
    """Maps [start, end) inside an expression string of the scene to a Span in its file."""

    def __init__(self, loaded):
        self.loaded = loaded
        self.docs: dict[str, tuple[Document, LineIndex]] = {}

    def __call__(self, path: tuple, value: str, start: int, end: int) -> Span:
        sm = self.loaded.source_map
        base = sm.span(path)
        if not sm.has(path) or base.line <= 0:
            return base
        text = self.loaded.sources.get(base.file)
        if text is None:
            return base
        if base.file not in self.docs:
            self.docs[base.file] = (Document(text, base.file), LineIndex(text))
        doc, lines = self.docs[base.file]
        try:
            first = lines.starts[base.line - 1] + base.col - 1
            last_line = base.end_line or base.line
            last = lines.starts[last_line - 1] + (base.end_col or base.col)  # exclusive
        except IndexError:
            return base
        style = text[first] if text[first:first + 1] in ("'", '"', "|", ">") else None
        node = YScalar(value=value, text=value, style=style, start=first, end=last, span=base)
        return doc.inner_span(node, start, end)


def _located_message(message: str, span: Span, start: int) -> str:
    """For messages built in Python (no file positions), say where in the expression."""
    return message if span.line > 0 else f"{message} (at character {start + 1} of the expression)"


def check_task(loaded) -> tuple[list[Diagnostic], CheckedTask | None]:
    """Check the task of a loaded scene. Returns (diagnostics, checked task or None when the scene has
    no task)."""
    scene = loaded.scene
    if not scene.HasField("task"):
        return [], None
    task = scene.task
    names = SceneNames.of(scene)
    checker = Checker(names)
    spans = _Spans(loaded)
    diags: list[Diagnostic] = []
    sections = {}
    for field, word in SECTIONS:
        seen: dict[str, int] = {}
        terms = []
        for i, term in enumerate(getattr(task, field)):
            here = ("task", field, i)
            name = term.name or f"{word}_{i}"
            if term.name:
                if term.name in seen:
                    diags.append(Diagnostic("E610", f"{word} term '{term.name}' is declared twice "
                                            f"(first as term {seen[term.name]})",
                                            loaded.source_map.span(here + ("name",)),
                                            "term names must be unique within a section"))
                seen.setdefault(term.name, i)
            path = here + ("expr",)
            if loaded.source_map.failed(path):
                terms.append(None)
                continue
            expr_span = loaded.source_map.span(path if loaded.source_map.has(path) else here)
            if not term.expr.strip():
                diags.append(Diagnostic("E609", f"{word} term '{name}' has no expression", expr_span,
                                        "give it an `expr`"))
                terms.append(None)
                continue
            try:
                tree = parse(term.expr)
            except ParseError as e:
                span = spans(path, term.expr, e.start, e.end)
                diags.append(Diagnostic(e.code, _located_message(e.message, span, e.start), span, e.hint))
                terms.append(None)
                continue
            typed = checker.check(tree)
            for code, message, start, end, hint in checker.problems:
                span = spans(path, term.expr, start, end)
                diags.append(Diagnostic(code, _located_message(message, span, start), span, hint))
            if typed is None:
                terms.append(None)
                continue
            problem = _section_problem(field, typed.type)
            if problem:
                message, hint = problem
                span = spans(path, term.expr, 0, len(term.expr))
                diags.append(Diagnostic("E608", f"{word} term '{name}' {message}", span, hint))
                terms.append(None)
                continue
            weight = term.weight if term.HasField("weight") else 1.0
            terms.append(CheckedTerm(name, typed, weight, expr_span))
        sections[field] = tuple(terms)
    if not task.observations:
        diags.append(Diagnostic("W601", "the task has no observations", loaded.source_map.span(("task",)),
                                "a learner sees only what `observations` lists", Severity.WARNING))
    return diags, CheckedTask(sections["observations"], sections["reward"], sections["termination"], names,
                              frozenset(checker.used_parameters))


def with_task_diagnostics(loaded, diagnostics) -> list[Diagnostic]:
    """`diagnostics` plus the task's; the loader's W101 ("parameter is never used") is dropped for
    parameters that only the task uses (the loader does not read task expressions)."""
    task_diags, checked = check_task(loaded)
    out = list(diagnostics)
    if checked is not None and checked.used_parameters:
        used = {loaded.source_map.span(("parameters", i, "name"))
                for i, p in enumerate(loaded.scene.parameters) if p.name in checked.used_parameters}
        out = [d for d in out if not (d.code == "W101" and d.span in used)]
    return out + task_diags


def _section_problem(field: str, t: Type) -> tuple[str, str] | None:
    if field == "observations" and t.boolean:
        return f"is a {t.describe()}; observations are numbers", "write where(c, 1, 0)"
    if field == "reward" and (t.boolean or t.n is not None):
        hint = "sum its entries with sum(...)" if t.n is not None and not t.boolean else \
            "write where(c, 1, 0)"
        return f"is a {t.describe()}; a reward term is a single number", hint
    if field == "termination" and (not t.boolean or t.n is not None):
        hint = "combine the entries with any(...) or all(...)" if t.boolean else "compare it, e.g. x > 1"
        return f"is a {t.describe()}; a termination term is a single boolean", hint
    return None

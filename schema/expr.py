"""Expressions in numeric fields: parse with `expr.lark`, fold to an SI value with a dimension.

Where it sits: schema/. The loaders call `evaluate(text, names)` for every string found where a
number is expected (and for parameter definitions); the result is a `Quantity` whose `value` is SI.
Errors are `ExprError`s carrying the character offsets of the offending token inside `text`, so the
loader can point a caret at it in the file. No jax.

Dimensions: a literal number is *bare* (no unit); it adapts to the other operand of `+`/`-` and to
the field it ends up in. A quantity with a unit (or a parameter defined with one) carries its
dimension through `*`, `/`, `^`, `sqrt`; `+`, `-`, `min`, `max`, `atan2` need equal dimensions.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
from fractions import Fraction
from typing import Callable, Mapping

import lark

from . import units
from .names import did_you_mean
from .units import ANGLE, DIMENSIONLESS, Dims

MAX_EXPRESSION_CHARS = 1000  # longer strings are refused before parsing (hostile input)
MAX_NESTING = 50             # parentheses deeper than this are refused (the evaluator recurses)

CONSTANTS: dict[str, float] = {"pi": math.pi}


@dataclasses.dataclass(frozen=True, slots=True)
class Quantity:
    value: float                     # SI
    dims: Dims
    bare: bool                       # no unit took part: the number adapts to where it is used
    origin: tuple[int, int] | None   # [start, end) of the token that gave it its dimension

    def with_origin(self, origin):
        return dataclasses.replace(self, origin=origin)


def plain(value: float) -> Quantity:
    """A bare number (from a YAML number, or a parameter without a unit)."""
    return Quantity(float(value), DIMENSIONLESS, True, None)


class ExprError(Exception):
    """A problem in an expression; `start`/`end` are character offsets into its text."""

    def __init__(self, code: str, message: str, start: int, end: int, hint: str = ""):
        super().__init__(message)
        self.code, self.message, self.start, self.end, self.hint = code, message, start, end, hint


class Unresolved(Exception):
    """The expression names something that already failed (reported elsewhere): stay quiet."""


@dataclasses.dataclass(frozen=True)
class Names:
    """What names mean while evaluating one expression.

    `values`: parameters defined so far. `later`: parameters defined after this point (naming one
    is "used before it is defined"). `failed`: parameters whose own definition failed. `used`:
    filled with every parameter name the expression reads.
    """
    values: Mapping[str, Quantity] = dataclasses.field(default_factory=dict)
    later: frozenset[str] = frozenset()
    failed: frozenset[str] = frozenset()
    used: set[str] = dataclasses.field(default_factory=set)


@functools.lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = (pathlib.Path(__file__).with_name("expr.lark")).read_text(encoding="utf-8")
    return lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                     maybe_placeholders=False)


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> lark.Tree | lark.Token:
    """The syntax tree of `text`; raises ExprError (E105, E109) with the offset of the problem."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExprError("E105", f"expression is too long ({len(text)} characters; the limit is "
                        f"{MAX_EXPRESSION_CHARS})", 0, len(text))
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth > MAX_NESTING:
            raise ExprError("E105", f"expression nests parentheses deeper than {MAX_NESTING}", i, i + 1)
    if not text.strip():
        raise ExprError("E105", "empty expression where a number is expected", 0, len(text))
    try:
        return _parser().parse(text)
    except lark.UnexpectedCharacters as e:
        pos = e.pos_in_stream
        word = _word_at(text, pos)
        if word and _after_number(text, pos):
            raise ExprError("E109", f"unknown unit '{word}'", pos, pos + len(word),
                            did_you_mean(word, units.UNITS) or
                            "units: " + ", ".join(units.UNITS)) from None
        shown = text[pos] if pos < len(text) else ""
        raise ExprError("E105", f"unexpected character {shown!r} in expression", pos, pos + 1) from None
    except lark.UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            raise ExprError("E105", "expression ends too early", len(text), len(text) + 1) from None
        pos = tok.start_pos
        word = str(tok)
        if tok.type == "NAME" and _after_number(text, pos):
            raise ExprError("E109", f"unknown unit '{word}'", pos, tok.end_pos,
                            did_you_mean(word, units.UNITS) or "units: " + ", ".join(units.UNITS)) from None
        raise ExprError("E105", f"unexpected '{word}' in expression", pos, tok.end_pos) from None
    except lark.UnexpectedInput as e:  # UnexpectedEOF and relatives
        raise ExprError("E105", f"cannot read the expression: {e.__class__.__name__}",
                        len(text), len(text) + 1) from None


def _word_at(text: str, pos: int) -> str:
    end = pos
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[pos:end]


def _after_number(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return bool(before) and (before[-1].isdigit() or before[-1] == ".")


# ---------------------------------------------------------------------------------------------
# Evaluation


def _span(node) -> tuple[int, int]:
    if isinstance(node, lark.Token):
        return node.start_pos, node.end_pos
    return node.meta.start_pos, node.meta.end_pos


def evaluate(text: str, names: Names | None = None) -> Quantity:
    """Fold `text` to a Quantity. Raises ExprError, or Unresolved when it names a failed parameter."""
    tree = parse(text)
    try:
        return _Evaluator(names or Names()).eval(tree)
    except RecursionError:
        raise ExprError("E105", "expression is too complex to evaluate", 0, len(text)) from None


def _exponent(q: Quantity, where) -> Fraction:
    frac = Fraction(q.value).limit_denominator(12)
    if abs(float(frac) - q.value) > 1e-9 * max(1.0, abs(q.value)):
        raise ExprError("E112", "a quantity with a unit can only be raised to a simple fraction "
                        f"(got {q.value:g})", *_span(where))
    return frac


def _mismatch(a: Quantity, b: Quantity, what: str, where) -> ExprError:
    return ExprError("E108", f"{what} needs equal units, but one side is "
                     f"{units.describe_dims(a.dims)} and the other {units.describe_dims(b.dims)}",
                     *(b.origin or _span(where)))


def _same_dims(a: Quantity, b: Quantity, what: str, where) -> tuple[Dims, bool, tuple | None]:
    """Dimension of a `+`-like combination: bare numbers adapt to the other side."""
    if a.bare and b.bare:
        return DIMENSIONLESS, True, None
    if a.bare:
        return b.dims, False, b.origin
    if b.bare or a.dims == b.dims:
        return a.dims, False, a.origin
    raise _mismatch(a, b, what, where)


def _as_angle(q: Quantity, fn: str, where) -> float:
    if not q.bare and q.dims not in (ANGLE, DIMENSIONLESS):
        raise ExprError("E112", f"{fn}() takes an angle, not {units.describe_dims(q.dims)}",
                        *(q.origin or _span(where)))
    return q.value


def _as_number(q: Quantity, fn: str, where) -> float:
    if not q.dims.is_dimensionless:
        raise ExprError("E112", f"{fn}() takes a plain number, not {units.describe_dims(q.dims)}",
                        *(q.origin or _span(where)))
    return q.value


def _fn_radians(args, where):
    (x,) = args
    if not x.bare:
        raise ExprError("E112", "radians() converts a plain number of degrees; "
                        f"this argument is already {units.describe_dims(x.dims)}",
                        *(x.origin or _span(where)), "write `30 deg` or `radians(30)`")
    return Quantity(math.radians(x.value), ANGLE, False, _span(where))


def _fn_degrees(args, where):
    (x,) = args
    return plain(math.degrees(_as_angle(x, "degrees", where)))


def _trig(fn: Callable[[float], float], name: str):
    def apply(args, where):
        (x,) = args
        return plain(fn(_as_angle(x, name, where)))
    return apply


def _inverse_trig(fn: Callable[[float], float], name: str):
    def apply(args, where):
        (x,) = args
        return Quantity(fn(_as_number(x, name, where)), ANGLE, False, _span(where))
    return apply


def _fn_atan2(args, where):
    y, x = args
    _same_dims(y, x, "atan2()", where)
    return Quantity(math.atan2(y.value, x.value), ANGLE, False, _span(where))


def _fn_sqrt(args, where):
    (x,) = args
    return Quantity(math.sqrt(x.value), x.dims ** Fraction(1, 2), x.bare, x.origin)


def _fn_abs(args, where):
    (x,) = args
    return dataclasses.replace(x, value=abs(x.value))


def _extreme(pick):
    def apply(args, where):
        result = args[0]
        for other in args[1:]:
            dims, bare, origin = _same_dims(result, other, "comparing", where)
            result = Quantity(pick(result.value, other.value), dims, bare, origin)
        return result
    return apply


# name -> (arity: int, or -1 for "one or more", implementation)
FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "radians": (1, _fn_radians),
    "degrees": (1, _fn_degrees),
    "sqrt": (1, _fn_sqrt),
    "sin": (1, _trig(math.sin, "sin")),
    "cos": (1, _trig(math.cos, "cos")),
    "tan": (1, _trig(math.tan, "tan")),
    "asin": (1, _inverse_trig(math.asin, "asin")),
    "acos": (1, _inverse_trig(math.acos, "acos")),
    "atan2": (2, _fn_atan2),
    "abs": (1, _fn_abs),
    "min": (-1, _extreme(min)),
    "max": (-1, _extreme(max)),
}

RESERVED = frozenset(units.UNITS) | frozenset(FUNCTIONS) | frozenset(CONSTANTS)


class _Evaluator:
    def __init__(self, names: Names):
        self.names = names

    def eval(self, node) -> Quantity:
        try:
            return getattr(self, "_" + node.data)(node)
        except ArithmeticError as e:  # ZeroDivisionError, OverflowError
            raise ExprError("E111", f"arithmetic error: {e}", *_span(node)) from None
        except ValueError as e:       # math domain errors
            raise ExprError("E111", f"arithmetic error: {e}", *_span(node)) from None

    def _number(self, node) -> Quantity:
        return plain(float(node.children[0]))

    def _quantity(self, node) -> Quantity:
        number, unit_tok = node.children
        unit = units.parse_unit(str(unit_tok))
        return Quantity(float(number) * unit.scale, unit.dims, False, _span(unit_tok))

    def _name(self, node) -> Quantity:
        tok = node.children[0]
        name = str(tok)
        names = self.names
        if name in names.values:
            names.used.add(name)
            q = names.values[name]
            return q.with_origin(_span(tok)) if not q.bare else q
        if name in names.failed:
            names.used.add(name)
            raise Unresolved(name)
        if name in CONSTANTS:
            return plain(CONSTANTS[name])
        span = _span(tok)
        if name in names.later:
            names.used.add(name)
            raise ExprError("E107", f"parameter '{name}' is used before it is defined", *span,
                            "move its definition above this one")
        if name in FUNCTIONS:
            raise ExprError("E112", f"'{name}' is a function; call it like {name}(x)", *span)
        if name in units.UNITS:
            raise ExprError("E106", f"'{name}' is a unit, not a value", *span,
                            f"a unit follows a number: write `1 {name}`")
        known = list(names.values) + list(names.later) + list(CONSTANTS) + list(FUNCTIONS)
        hint = did_you_mean(name, known)
        if name.lower() in ("nan", "inf", "infinity"):
            hint = "values must be finite numbers"
        raise ExprError("E106", f"unknown name '{name}'", *span, hint)

    def _call(self, node) -> Quantity:
        tok, *arg_nodes = node.children
        name = str(tok)
        if name not in FUNCTIONS:
            if name in self.names.values or name in CONSTANTS:
                raise ExprError("E112", f"'{name}' is not a function", *_span(tok))
            raise ExprError("E106", f"unknown function '{name}'", *_span(tok),
                            did_you_mean(name, FUNCTIONS) or "functions: " + ", ".join(FUNCTIONS))
        arity, impl = FUNCTIONS[name]
        if (arity >= 0 and len(arg_nodes) != arity) or (arity < 0 and not arg_nodes):
            want = "one or more arguments" if arity < 0 else \
                f"{arity} argument{'s' if arity != 1 else ''}"
            raise ExprError("E112", f"{name}() takes {want}, got {len(arg_nodes)}", *_span(node))
        return impl([self.eval(a) for a in arg_nodes], node)

    def _neg(self, node) -> Quantity:
        q = self.eval(node.children[0])
        return dataclasses.replace(q, value=-q.value)

    def _pos(self, node) -> Quantity:
        return self.eval(node.children[0])

    def _add(self, node) -> Quantity:
        a, b = (self.eval(c) for c in node.children)
        dims, bare, origin = _same_dims(a, b, "'+'", node)
        return Quantity(a.value + b.value, dims, bare, origin)

    def _sub(self, node) -> Quantity:
        a, b = (self.eval(c) for c in node.children)
        dims, bare, origin = _same_dims(a, b, "'-'", node)
        return Quantity(a.value - b.value, dims, bare, origin)

    def _mul(self, node) -> Quantity:
        a, b = (self.eval(c) for c in node.children)
        return Quantity(a.value * b.value, a.dims * b.dims, a.bare and b.bare,
                        a.origin if not a.bare else b.origin)

    def _div(self, node) -> Quantity:
        a, b = (self.eval(c) for c in node.children)
        if b.value == 0.0:
            raise ExprError("E111", "division by zero", *_span(node.children[1]))
        return Quantity(a.value / b.value, a.dims / b.dims, a.bare and b.bare,
                        a.origin if not a.bare else b.origin)

    def _pow(self, node) -> Quantity:
        base_node, _, exp_node = node.children
        base, exp = self.eval(base_node), self.eval(exp_node)
        if not exp.dims.is_dimensionless:
            raise ExprError("E112", f"an exponent must be a plain number, not "
                            f"{units.describe_dims(exp.dims)}", *(exp.origin or _span(exp_node)))
        dims = base.dims ** _exponent(exp, exp_node) if not base.dims.is_dimensionless else base.dims
        return Quantity(math.pow(base.value, exp.value), dims, base.bare, base.origin)

"""Physical units: dimensions, the unit literals of expressions, and the unit of each proto field.

Where it sits: schema/. The expression evaluator (`expr.py`) turns `0.1 m` or `9.81 m/s^2` into an SI
value with a `Dims`; the YAML loader asks `field_dims` which dimensions a field accepts (read from the
`(scenec.unit)` option of `scene.proto`) and checks them. No jax.

A dimension is a vector of rational exponents over the base units (m, kg, s, rad). Angle is kept as
its own base so that `30 deg` can never be read as a length; torque `N*m` and energy `J` are the
same dimension, which is fine for checking.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import NamedTuple

from . import scene_pb2

BASE = ("m", "kg", "s", "rad")


class Dims(NamedTuple):
    """Exponents of m, kg, s, rad."""
    m: Fraction = Fraction(0)
    kg: Fraction = Fraction(0)
    s: Fraction = Fraction(0)
    rad: Fraction = Fraction(0)

    def __mul__(self, other: "Dims") -> "Dims":  # type: ignore[override]
        return Dims(*(a + b for a, b in zip(self, other)))

    def __truediv__(self, other: "Dims") -> "Dims":
        return Dims(*(a - b for a, b in zip(self, other)))

    def __pow__(self, exponent: Fraction) -> "Dims":
        return Dims(*(a * exponent for a in self))

    @property
    def is_dimensionless(self) -> bool:
        return not any(self)


DIMENSIONLESS = Dims()
LENGTH = Dims(m=Fraction(1))
MASS = Dims(kg=Fraction(1))
TIME = Dims(s=Fraction(1))
ANGLE = Dims(rad=Fraction(1))
FORCE = Dims(m=Fraction(1), kg=Fraction(1), s=Fraction(-2))


class Unit(NamedTuple):
    scale: float  # SI value of one of this unit
    dims: Dims
    title: str    # spelled out, for messages


# The unit literals of the expression language. `expr.lark` lists the same names in its UNIT
# terminal (a test checks that the two agree). Keep names disjoint from functions and constants.
UNITS: dict[str, Unit] = {
    "m": Unit(1.0, LENGTH, "metre"),
    "cm": Unit(1e-2, LENGTH, "centimetre"),
    "mm": Unit(1e-3, LENGTH, "millimetre"),
    "km": Unit(1e3, LENGTH, "kilometre"),
    "kg": Unit(1.0, MASS, "kilogram"),
    "g": Unit(1e-3, MASS, "gram"),
    "s": Unit(1.0, TIME, "second"),
    "ms": Unit(1e-3, TIME, "millisecond"),
    "rad": Unit(1.0, ANGLE, "radian"),
    "deg": Unit(math.pi / 180.0, ANGLE, "degree"),
    "N": Unit(1.0, FORCE, "newton"),
    "J": Unit(1.0, FORCE * LENGTH, "joule"),
    "Hz": Unit(1.0, DIMENSIONLESS / TIME, "hertz"),
}

_UNIT_FACTOR = re.compile(r"\s*([A-Za-z]+)\s*(?:(?:\^|\*\*)\s*([+-]?\d+))?\s*")


class UnitError(ValueError):
    """A unit string that cannot be read; `pos` is the offset of the offending name."""

    def __init__(self, message: str, pos: int, name: str = ""):
        super().__init__(message)
        self.pos = pos
        self.name = name


def parse_unit(text: str) -> Unit:
    """`"kg/m^3"` -> Unit(1.0, Dims(m=-3, kg=1)). `*` and `/` apply to the next factor only, so
    `N*m*s/rad` is N*m*s per rad; "1" (or "") is dimensionless."""
    text = text.strip()
    if text in ("", "1"):
        return Unit(1.0, DIMENSIONLESS, "")
    scale, dims = 1.0, DIMENSIONLESS
    pos, sign = 0, 1
    if text.startswith("1/"):  # "1/s"
        pos, sign = 2, -1
    while True:
        match = _UNIT_FACTOR.match(text, pos)
        if not match or not match.group(1):
            raise UnitError(f"cannot read the unit {text!r}", pos)
        name = match.group(1)
        unit = UNITS.get(name)
        if unit is None:
            raise UnitError(f"unknown unit {name!r}", match.start(1), name)
        power = int(match.group(2) or 1) * sign
        scale *= unit.scale ** power
        dims = dims * (unit.dims ** Fraction(power))
        pos = match.end()
        if pos == len(text):
            return Unit(scale, dims, text)
        op = text[pos]
        if op not in "*/":
            raise UnitError(f"cannot read the unit {text!r}", pos)
        sign = 1 if op == "*" else -1
        pos += 1


# Preferred spellings when a dimension is printed; the first match wins.
_NAMED = ("1", "m", "kg", "s", "rad", "N", "N*m", "m/s", "m/s^2", "rad/s", "kg/m^3", "kg*m^2",
          "N/m", "N*s/m", "N*m/rad", "N*m*s/rad", "1/s", "m^2", "m^3")


def format_dims(dims: Dims) -> str:
    """A readable unit for a dimension: "m", "kg/m^3", "N*m/rad"; "" when dimensionless."""
    if dims.is_dimensionless:
        return ""
    for name in _NAMED:
        if parse_unit(name).dims == dims:
            return name
    up = [(b, e) for b, e in zip(BASE, dims) if e > 0]
    down = [(b, -e) for b, e in zip(BASE, dims) if e < 0]

    def product(factors):
        return "*".join(b if e == 1 else f"{b}^{e}" if e.denominator == 1 else f"{b}^({e})"
                        for b, e in factors)

    if not up:
        return "1/" + product(down) if len(down) == 1 else "1/(" + product(down) + ")"
    if not down:
        return product(up)
    return product(up) + "/" + (product(down) if len(down) == 1 else "(" + product(down) + ")")


_KIND_WORDS = {
    DIMENSIONLESS: "a plain number", LENGTH: "a length", MASS: "a mass", TIME: "a time",
    ANGLE: "an angle", FORCE: "a force", FORCE * LENGTH: "a torque",
    LENGTH / TIME: "a velocity", ANGLE / TIME: "an angular velocity",
}


def describe_dims(dims: Dims) -> str:
    """`"a length (m)"`, `"an angle (rad)"`, `"a quantity in kg/m^3"`."""
    unit = format_dims(dims)
    word = _KIND_WORDS.get(dims)
    if word is None:
        return f"a quantity in {unit}"
    return f"{word} ({unit})" if unit else word


# ---------------------------------------------------------------------------------------------
# Field units

ROTATIONAL = (scene_pb2.HINGE, scene_pb2.BALL)


def field_unit_spec(field) -> str:
    """The `(scenec.unit)` option of a proto field ("" for fields without one)."""
    return field.GetOptions().Extensions[scene_pb2.unit]


@functools.lru_cache(maxsize=None)
def _spec_dims(spec: str) -> tuple[Dims, ...]:
    return tuple(parse_unit(alt).dims for alt in spec.split("|"))


def field_dims(field, joint_kind: int | None = None, index: int = 0) -> tuple[Dims, ...] | None:
    """The dimensions a numeric field accepts; None when any is fine ("any").

    `joint_kind` resolves "rad|m"-style units (the first alternative for hinge and ball joints,
    the second for slide joints, either when the kind is unknown or the field applies to both).
    `JointValue.q`/`qd` depend on the coordinate `index` too: a ball joint's q is a unit
    quaternion, a free joint's q is a position (m) then a quaternion, its qd a linear then an
    angular velocity.
    """
    spec = field_unit_spec(field)
    if spec == "any":
        return None
    if not spec:
        return (DIMENSIONLESS,)
    alternatives = _spec_dims(spec)
    if field.containing_type.name == "JointValue":
        is_q = field.name == "q"
        if joint_kind == scene_pb2.BALL:
            return (DIMENSIONLESS,) if is_q else (ANGLE / TIME,)
        if joint_kind == scene_pb2.FREE:
            if is_q:
                return (LENGTH,) if index < 3 else (DIMENSIONLESS,)
            return (LENGTH / TIME,) if index < 3 else (ANGLE / TIME,)
        if joint_kind is None and is_q:
            return alternatives + (DIMENSIONLESS,)
    if len(alternatives) == 1:
        return alternatives
    if joint_kind in ROTATIONAL:
        return alternatives[:1]
    if joint_kind == scene_pb2.SLIDE:
        return alternatives[1:2]
    return alternatives

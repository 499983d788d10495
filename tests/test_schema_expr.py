"""The expression language: values against Python's own arithmetic, dimensions, error offsets."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from scenec.schema import expr, units
from scenec.schema.units import ANGLE, DIMENSIONLESS, LENGTH, MASS, TIME, Dims

# Evaluation does the same float operations as the Python reference, in the same order.
EXACT_RTOL = 1e-15


def value(text, **params):
    names = expr.Names(values={k: v if isinstance(v, expr.Quantity) else expr.plain(v)
                               for k, v in params.items()})
    return expr.evaluate(text, names)


def error(text, **params):
    with pytest.raises(expr.ExprError) as info:
        value(text, **params)
    return info.value


@pytest.mark.parametrize("text,expected", [
    ("1 + 2 * 3", 7.0),
    ("(1 + 2) * 3", 9.0),
    ("2 ^ 3 ^ 2", 2.0 ** 9),       # right-associative
    ("2 ** 3", 8.0),
    ("-2 ^ 2", -4.0),              # unary minus binds looser than ^
    ("2 ^ -1", 0.5),
    ("10 / 4 / 5", 0.5),           # left-associative
    ("1 - 2 - 3", -4.0),
    ("+3", 3.0),
    ("pi", math.pi),
    ("sqrt(2)", math.sqrt(2)),
    ("sin(pi / 6)", math.sin(math.pi / 6)),
    ("cos(1)", math.cos(1)),
    ("tan(0.5)", math.tan(0.5)),
    ("degrees(pi)", 180.0),
    ("abs(-3)", 3.0),
    ("min(3, 1, 2)", 1.0),
    ("max(3, 1, 2)", 3.0),
    ("1.5e3", 1500.0),
    (".5", 0.5),
])
def test_plain_arithmetic(text, expected):
    q = value(text)
    assert q.value == pytest.approx(expected, rel=EXACT_RTOL)
    assert q.dims == DIMENSIONLESS


@pytest.mark.parametrize("text,expected,dims", [
    ("5 cm", 0.05, LENGTH),
    ("2 mm", 0.002, LENGTH),
    ("10 g", 0.01, MASS),
    ("30 deg", math.pi / 6, ANGLE),
    ("radians(30)", math.pi / 6, ANGLE),
    ("asin(0.5)", math.asin(0.5), ANGLE),
    ("atan2(1 m, 1 m)", math.pi / 4, ANGLE),
    ("1000 kg/m^3", 1000.0, MASS / LENGTH ** 3),
    ("9.81 m/s^2", 9.81, LENGTH / TIME ** 2),
    ("1 N*m", 1.0, units.FORCE * LENGTH),
    ("20 ms", 0.02, TIME),
    ("2 m * 3 m", 6.0, LENGTH ** 2),
    ("sqrt(4 m^2)", 2.0, LENGTH),
    ("(2 m)^2", 4.0, LENGTH ** 2),
    ("2 m^2", 2.0, LENGTH ** 2),
    ("1 m + 2", 3.0, LENGTH),       # the bare number adapts
    ("max(1 m, 50 cm)", 1.0, LENGTH),
    ("4 m / s", 4.0, LENGTH / TIME),
    ("1 m / 2", 0.5, LENGTH),
])
def test_quantities(text, expected, dims):
    q = value(text)
    assert q.value == pytest.approx(expected, rel=1e-12)
    assert q.dims == dims
    assert not q.bare


def test_parameters_carry_dimension():
    leg = expr.Quantity(0.4, LENGTH, False, None)
    q = value("2 * leg + 1", leg=leg)
    assert q.value == pytest.approx(1.8) and q.dims == LENGTH
    q = value("n * 3", n=2.0)
    assert q.bare and q.value == 6.0


@pytest.mark.parametrize("text,code,start,end", [
    ("1 m + 2 kg", "E108", 8, 10),
    ("2 * lg", "E106", 4, 6),
    ("2 lb", "E109", 2, 4),
    ("1 + * 2", "E105", 4, 5),
    ("(1 + 2", "E105", 6, 7),
    ("1 / 0", "E111", 4, 5),
    ("sqrt(-1)", "E111", 0, 8),
    ("sin(2 m)", "E112", 6, 7),
    ("radians(30 deg)", "E112", 11, 14),
    ("sqrt(1, 2)", "E112", 0, 10),
    ("foo(1)", "E106", 0, 3),
    ("m", "E106", 0, 1),
    ("2 ^ (1 m)", "E112", 7, 8),
    ("", "E105", 0, 0),
    ("1 $ 2", "E105", 2, 3),
])
def test_errors_carry_offsets(text, code, start, end):
    e = error(text)
    assert (e.code, e.start, e.end) == (code, start, end), e.message


def test_later_and_failed_parameters():
    names = expr.Names(values={}, later=frozenset({"leg"}), failed=frozenset({"arm"}))
    with pytest.raises(expr.ExprError) as info:
        expr.evaluate("2 * leg", names)
    assert info.value.code == "E107"
    with pytest.raises(expr.Unresolved):
        expr.evaluate("2 * arm", names)


def test_hostile_expressions_are_refused_cleanly():
    assert error("(" * 60 + "1" + ")" * 60).code == "E105"
    assert error("1" * (expr.MAX_EXPRESSION_CHARS + 1)).code == "E105"
    assert error("+".join(["1"] * 450)).code == "E105"  # too many operators to evaluate
    assert math.isinf(value("1e400").value)               # reported as non-finite by validate


def test_unit_terminal_matches_units_table():
    grammar = (expr.pathlib.Path(expr.__file__).with_name("expr.lark")).read_text()
    line = next(l for l in grammar.splitlines() if l.startswith("UNIT:"))
    names_in_grammar = set(re.search(r"\(\?:([^)]*)\)", line).group(1).split("|"))
    assert names_in_grammar == set(units.UNITS)
    for name in units.UNITS:
        q = value(f"2 {name}")
        assert q.value == pytest.approx(2 * units.UNITS[name].scale)


def test_reserved_names_are_disjoint():
    assert not set(units.UNITS) & set(expr.FUNCTIONS)
    assert not set(units.UNITS) & set(expr.CONSTANTS)


@pytest.mark.parametrize("spec,dims", [
    ("N*m*s/rad", units.FORCE * LENGTH * TIME / ANGLE),
    ("kg*m^2", MASS * LENGTH ** 2),
    ("kg/m^3", MASS / LENGTH ** 3),
    ("1/s", DIMENSIONLESS / TIME),
    ("1", DIMENSIONLESS),
])
def test_parse_unit(spec, dims):
    assert units.parse_unit(spec).dims == dims


def test_format_dims_round_trips():
    for spec in ("m", "kg/m^3", "N*m/rad", "m/s^2", "kg*m^2", "rad/s"):
        assert units.format_dims(units.parse_unit(spec).dims) == spec
    odd = Dims(*(units.Fraction(x) for x in (1, 0, -3, 0)))
    assert units.parse_unit(units.format_dims(odd)).dims == odd


@settings(max_examples=60, deadline=None)
@given(a=st.floats(-1e6, 1e6), b=st.floats(-1e6, 1e6), c=st.floats(0.5, 100))
def test_random_arithmetic_matches_python(a, b, c):
    text = f"({a!r} + {b!r}) * {c!r} - {a!r} / {c!r}"
    expected = (a + b) * c - a / c
    assert value(text).value == pytest.approx(expected, rel=EXACT_RTOL, abs=1e-300)


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="0123456789.+-*/^() mkgsradegNJHzpi,abc", max_size=40))
def test_random_text_never_crashes(text):
    try:
        q = value(text)
    except expr.ExprError as e:
        assert 0 <= e.start <= len(text) + 1
        assert e.code in ("E105", "E106", "E107", "E108", "E109", "E111", "E112")
    else:
        assert isinstance(q.value, float)

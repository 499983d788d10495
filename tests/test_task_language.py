"""The task language: parsing, type checking, located errors, lowering, and evaluation against
independent references (Python's own arithmetic, NumPy in float64 on the same state, analytic
velocities of a pendulum and of a free body).

The error catalogue (tests/catalogue/E6xx_*) pins one located case per code; these tests cover the
rest: several errors at once, precedence, types, hostile input, and what the runtime computes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SCENES_DIR
from scenec.compiler.check import check
from scenec.compiler.task.check import Checker, SceneNames, check_task
from scenec.compiler.task.parse import MAX_LENGTH, ParseError, parse
from scenec.schema import load, scene_pb2

# float32 evaluation against float64 references: a few ulps of the quantities involved (≤ 10)
F32_TOL = 1e-5
# analytic velocities vs the runtime's forward kinematics differentiated in float32
VEL_TOL = 1e-4

ARM = """
name: arm
options: {timestep: 0.01, gravity: [0, 0, -9.81]}
parameters:
  reach: 0.4 m
bodies:
  - name: base
    pos: [0, 0, 1]
    mass: 2
    inertia: [0.02, 0.03, 0.04]
    colliders: [{box: {half_size: [0.1, 0.1, 0.1]}, mask: 0}]
  - name: link
    pos: [0.5, 0, 1]
    mass: 1
    inertia: [0.01, 0.01, 0.01]
    colliders: [{sphere: {radius: 0.05}, mask: 0}]
  - name: tip
    pos: [0.8, 0, 1]
    colliders: [{sphere: {radius: 0.02}, mask: 0}]
joints:
  - {name: root, kind: free, child: base}
  - {name: elbow, kind: hinge, parent: base, child: link, anchor: [-0.5, 0, 0], axis: [0, 1, 0]}
  - {name: weld, kind: fixed, parent: link, child: tip}
actuators:
  - {name: motor, joint: elbow, ctrl_range: [-1, 1]}
task:
  targets:
    - {name: goal, pos: [1, 2, 3]}
  observations:
    - {name: all, expr: "[q, qd]"}
"""


def names_of(text: str) -> SceneNames:
    return SceneNames.of(load(text).scene)


def typed(expr: str, text: str = ARM):
    checker = Checker(names_of(text))
    result = checker.check(parse(expr))
    return result, checker.problems


# --- parsing and types -----------------------------------------------------------------------------

@pytest.mark.parametrize("expr,type_", [
    ("1", "number"), ("true", "boolean"), ("q", "vector(8) of numbers"), ("qd", "vector(7) of numbers"),
    ("action", "vector(1) of numbers"), ("action.motor", "number"), ("body.base.pos", "vector(3) of numbers"),
    ("body.base.quat", "vector(4) of numbers"), ("body.tip.zaxis.z", "number"),
    ("joint.root.q", "vector(7) of numbers"), ("joint.root.qd", "vector(6) of numbers"),
    ("joint.elbow.q", "number"), ("contact_force", "vector(6) of numbers"),
    ("contact_force.link", "vector(3) of numbers"), ("body.base.pos > 0", "vector(3) of booleans"),
    ("any(body.base.pos > 0)", "boolean"), ("[q, qd, 1]", "vector(16) of numbers"), ("q[7:]", "vector(1) of numbers"),
    ("q[-1]", "number"), ("norm(body.base.vel)", "number"), ("cross(body.base.pos, body.link.pos)", "vector(3) of numbers"),
    ("where(time > 1, body.base.pos, 0)", "vector(3) of numbers"), ("to_local(body.base.quat, com.vel)", "vector(3) of numbers"),
    ("min(q)", "number"), ("max(q, 0)", "vector(8) of numbers"), ("clip(qd, -1, 1)", "vector(7) of numbers"),
    ("reach * 2", "number"), ("param.reach", "number"), ("target.goal.pos", "vector(3) of numbers"),
    ("prev.body.base.pos.x", "number"), ("0.2 <= body.base.pos.z <= 1", "boolean"), ("dt", "number"),
])
def test_types(expr, type_):
    result, problems = typed(expr)
    assert not problems, problems
    assert result.type.describe() == type_


CONSTANTS = [
    ("-2^2", -4.0), ("2^-1", 0.5), ("2^3^2", 512.0), ("1 - 2 - 3", -4.0), ("8 / 4 / 2", 1.0),
    ("2 * 3 + 4", 10.0), ("2 * (3 + 4)", 14.0), ("-(3)", -3.0), ("+3", 3.0), ("2 ** 3", 8.0),
    ("where(1 < 2 < 3, 1, 0)", 1.0), ("where(1 < 3 < 2, 1, 0)", 0.0), ("where(not 1 > 2 and 2 > 1, 5, 6)", 5.0),
    ("where(1 > 2 or 2 > 1, 5, 6)", 5.0), ("abs(-2.5)", 2.5), ("sqrt(16)", 4.0), ("atan2(1, 1)", math.pi / 4),
    ("min(3, 1, 2)", 1.0), ("max([3, 1, 2])", 3.0), ("sum([1, 2, 3])", 6.0), ("mean([1, 2, 3])", 2.0),
    ("norm([3, 4])", 5.0), ("dot([1, 2], [3, 4])", 11.0), ("clip(5, -1, 1)", 1.0), ("[1, 2, 3][1]", 2.0),
    ("[1, 2, 3][-1]", 3.0), ("sum([1, 2, 3, 4][1:3])", 5.0), ("reach", 0.4), ("pi", math.pi),
    ("sign(-3)", -1.0), ("square(3)", 9.0), ("tanh(0)", 0.0), ("exp(0) + log(1)", 1.0), ("[1, 2, 3].y", 2.0),
    ("1e-3 * 1000", 1.0), (".5 + 1.", 1.5), ("dt", 0.01),
]


def test_constant_expressions():
    """Precedence, associativity and every function, through check, lowering and the runtime,
    against Python's own arithmetic."""
    import jax

    from scenec.runtime import step as rstep

    state = jax.jit(rstep.init)(_compiled()[0].model)
    got = evaluate_many([e for e, _ in CONSTANTS], state, np.zeros(1, np.float32))
    for expr, value in CONSTANTS:
        assert float(got[expr]) == pytest.approx(value, rel=F32_TOL, abs=F32_TOL), expr


def test_every_error_of_an_expression_is_reported():
    _, problems = typed("body.bse.pos + nrom(q) + joint.elbow.qq")
    codes = sorted(p[0] for p in problems)
    assert codes == ["E602", "E603", "E606"]


@pytest.mark.parametrize("expr,code", [
    ("body", "E603"), ("body.base", "E603"), ("prev.action", "E603"), ("prev.prev.q", "E603"),
    ("joint.weld.q", "E603"), ("q.w", "E603"), ("time.x", "E607"), ("q[14]", "E607"), ("q[1.5]", "E607"),
    ("q[time]", "E607"), ("q[3:3]", "E607"), ("time[0]", "E607"), ("1 + true", "E604"), ("not 1", "E604"),
    ("q and time > 0", "E604"), ("where(1, 2, 3)", "E604"), ("where(time > 0, 1, true)", "E604"),
    ("q + qd", "E605"), ("cross(q, q)", "E605"), ("to_local(body.base.pos, q)", "E605"),
    ("norm(q, qd)", "E606"), ("foo(1)", "E606"), ("bodyy.base.pos", "E602"), ("body.nobody.pos", "E602"),
    ("target.nogoal.pos", "E602"), ("param.nothing", "E602"), ("action.nomotor", "E602"),
    ("\"base\"", "E604"), ("[]", "E605"), ("[1, time > 0]", "E604"), ("body[1].pos", "E607"),
])
def test_error_codes(expr, code):
    result, problems = typed(expr)
    assert result is None
    assert [p[0] for p in problems] == [code], problems


def test_suggestions():
    _, problems = typed("body.bsae.pos")
    assert "did you mean 'base'" in problems[0][4]
    _, problems = typed("base")
    assert "body.base" in problems[0][4]
    _, problems = typed("motor")
    assert "action.motor" in problems[0][4]


def test_quoted_names():
    text = ARM.replace("name: link", 'name: "left link"').replace("child: link", 'child: "left link"')
    result, problems = typed('body["left link"].pos', text)
    assert not problems and result.type.n == 3


@pytest.mark.parametrize("text,code", [
    ("1 +", "E601"), ("(1", "E601"), ("1 2", "E601"), ("a = b", "E601"), ("a && b", "E601"),
    ("q[", "E601"), ("", "E609"), ("   ", "E609"), ("(" * 60 + "1" + ")" * 60, "E611"),
    ("1" + " + 1" * (MAX_LENGTH // 4), "E611"),
])
def test_syntax_errors(text, code):
    with pytest.raises(ParseError) as e:
        parse(text)
    assert e.value.code == code


def test_long_flat_chains_are_refused_not_crashing():
    # 1000 additions nest 1000 deep without brackets; refused as too deep, never a RecursionError
    with pytest.raises(ParseError) as e:
        parse(" + ".join(["q"] * 1000))
    assert e.value.code == "E611"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="qdbody.[]()+-*/^<>=!,:0123456789 _abcxyz\"'", max_size=60))
def test_arbitrary_text_never_raises(text):
    scene = f"""
bodies:
  - name: b
    colliders: [{{sphere: {{radius: 0.1}}}}]
joints:
  - {{name: j, kind: slide, child: b}}
task:
  observations:
    - {{expr: {text!r}}}
"""
    result = check(scene)  # diagnostics only; any exception fails the test
    for d in result.diagnostics:
        assert d.code.startswith(("E0", "E1", "E6", "W"))


def test_errors_point_into_the_file(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(ARM + '    - {name: bad, expr: "body.base.pos + body.link.poss"}\n')
    [d] = [d for d in check(path).diagnostics if d.is_error]
    line = path.read_text().splitlines()[d.span.line - 1]
    assert line[d.span.col - 1:d.span.end_col] == "poss"


def test_errors_in_a_python_message_say_where():
    scene = load(ARM).scene
    term = scene.task.reward.add()
    term.expr = "1 + body.nope.pos.x"
    diagnostics, _ = check_task(load(scene))
    [d] = diagnostics
    assert d.code == "E602" and "character 10" in d.message and "task.reward[0].expr" in d.span.file


def test_parameters_used_only_by_the_task_are_used():
    text = ARM.replace("- {name: all, expr: \"[q, qd]\"}", "- {name: all, expr: \"q * reach\"}")
    assert not [d for d in check(text).diagnostics if d.code == "W101"]
    assert [d for d in check(ARM).diagnostics if d.code == "W101"]


# --- lowering and evaluation -------------------------------------------------------------------

_CACHE = {}


def _compiled():
    if "arm" not in _CACHE:
        from scenec.compiler.api import compile

        _CACHE["arm"] = (compile(ARM, measure_jit=False),)
    return _CACHE["arm"]


def lowered(expr: str):
    from scenec.compiler.task.lower import _Resolver

    result, problems = typed(expr)
    assert not problems, problems
    compiled = _compiled()[0]
    return _Resolver(load(ARM).scene, compiled.ir, compiled.model).tree(result.tree)


def random_state(seed: int):
    """A state of the arm with random joint positions (unit root quaternion) and velocities."""
    import jax

    from scenec.runtime import step as rstep

    model = _compiled()[0].model
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat), rng.normal(size=1)])
    qd = rng.normal(size=7)
    s = jax.jit(rstep.init)(model, q.astype(np.float32), qd.astype(np.float32))
    force = rng.normal(size=(model.nbody, 3)).astype(np.float32)
    return s.replace(contact_force=force), rng.normal(size=1).astype(np.float32)


def evaluate_many(exprs, state, action, prev=None) -> dict:
    """{expr: value} of several expressions, evaluated in one jitted function (one compilation)."""
    import jax

    from scenec.runtime.task import View, evaluate

    model = _compiled()[0].model
    trees = {e: lowered(e) for e in exprs}
    targets = np.array([[1.0, 2.0, 3.0]], np.float32)

    def run(state, prev_state):
        prev_view = View(model, prev_state, action, targets)
        view = View(model, state, action, targets, prev_view)
        return {e: evaluate(tree, view) for e, tree in trees.items()}

    out = jax.jit(run)(state, prev if prev is not None else state)
    return {e: np.asarray(v, np.float64) for e, v in out.items()}


def rot(quat):
    w, x, y, z = np.asarray(quat, np.float64) / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_lowered_trees_hold_no_user_strings():
    """Names are resolved to indices; the only strings left are the language's own keywords."""
    allowed = {"const", "body", "read", "com", "target", "time", "dt", "neg", "not", "bin", "call",
               "index", "slice", "vec", "pos", "quat", "vel", "angvel", "xaxis", "yaxis", "zaxis",
               "contact_force", "q", "qd", "action", "+", "-", "*", "/", "^", "<", "<=", ">", ">=",
               "==", "!=", "and", "or", "norm", "sum", "clip", "where", "to_local"}

    def strings(t):
        if isinstance(t, str):
            yield t
        elif isinstance(t, tuple):
            for x in t:
                yield from strings(x)

    tree = lowered("norm(body.tip.pos - target.goal.pos) + sum(clip(contact_force.link, -1, 1)) "
                   "+ where(action.motor > 0, joint.elbow.qd, to_local(body.base.quat, com.vel).x)")
    assert set(strings(tree)) <= allowed
    assert not {"tip", "goal", "link", "motor", "elbow", "base"} & set(strings(tree))


@pytest.mark.parametrize("seed", [0, 1])
def test_evaluation_matches_numpy(seed):
    state, action = random_state(seed)
    model = _compiled()[0].model
    names = list(model.body_names)
    xpos = np.asarray(state.xpos, np.float64)
    xquat = np.asarray(state.xquat, np.float64)
    q, qd = np.asarray(state.q, np.float64), np.asarray(state.qd, np.float64)
    cf = np.asarray(state.contact_force, np.float64)
    base, link = names.index("base"), names.index("link")
    elbow = list(model.jnt_names).index("elbow")
    a = int(model.jnt_qpos_adr[elbow])
    goal = np.array([1.0, 2.0, 3.0])
    # the tip is welded to the link 0.3 m further along its x axis
    tip = xpos[link] + rot(xquat[link]) @ np.array([0.3, 0.0, 0.0])
    cases = {
        "body.base.pos": xpos[base],
        "body.link.quat": xquat[link],
        "body.link.zaxis": rot(xquat[link])[:, 2],
        "body.tip.pos": tip,
        "norm(body.tip.pos - target.goal.pos)": np.linalg.norm(tip - goal),
        "joint.elbow.q": q[a],
        "q[7:]": q[7:],
        "[q, qd]": np.concatenate([q, qd]),
        "sum(clip(contact_force, -1, 1) ^ 2)": np.sum(np.clip(cf[1:], -1, 1) ** 2),
        "contact_force.tip": cf[link],
        "to_local(body.base.quat, body.link.pos - body.base.pos)": rot(xquat[base]).T @ (xpos[link] - xpos[base]),
        "to_world(body.base.quat, [1, 0, 0])": rot(xquat[base])[:, 0],
        "cross(body.base.pos, body.link.pos)": np.cross(xpos[base], xpos[link]),
        "action.motor * 2": 2.0 * float(action[0]),
        "where(q > 0, q, -q)": np.abs(q),
        "max(qd) - min(qd)": qd.max() - qd.min(),
        "atan2(body.link.pos.y, body.link.pos.x)": math.atan2(xpos[link, 1], xpos[link, 0]),
        "mean(qd ^ 2)": np.mean(qd ** 2),
    }
    got = evaluate_many(cases, state, action)
    for expr, want in cases.items():
        np.testing.assert_allclose(got[expr], want, rtol=F32_TOL * 10, atol=F32_TOL * 10, err_msg=expr)


def test_prev_and_dt():
    import jax

    from scenec.runtime import step as rstep

    model = _compiled()[0].model
    before, action = random_state(3)
    after = jax.jit(rstep.step)(model, before, action)
    expr = "(body.base.pos - prev.body.base.pos) / dt"
    got = evaluate_many([expr], after, action, before)[expr]
    want = (np.asarray(after.xpos[1], np.float64) - np.asarray(before.xpos[1], np.float64)) / 0.01
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_velocities_are_analytic():
    """Free body: linear velocity is qd[0:3] (world), angular is R·ω_body. Link on a hinge about the
    base's y axis at the anchor: v = v_base + ω × (p − p_base_point)."""
    state, action = random_state(5)
    model = _compiled()[0].model
    names = list(model.body_names)
    base, link = names.index("base"), names.index("link")
    xpos = np.asarray(state.xpos, np.float64)
    xquat = np.asarray(state.xquat, np.float64)
    qd = np.asarray(state.qd, np.float64)
    got = evaluate_many(["body.base.vel", "body.base.angvel", "body.link.angvel", "body.link.vel",
                         "body.tip.vel", "com.pos", "com.vel"], state, action)
    r_base = rot(xquat[base])
    w_base = r_base @ qd[3:6]
    np.testing.assert_allclose(got["body.base.vel"], qd[0:3], atol=VEL_TOL)
    np.testing.assert_allclose(got["body.base.angvel"], w_base, atol=VEL_TOL)
    axis = r_base @ np.array([0.0, 1.0, 0.0])
    w_link = w_base + axis * qd[6]
    anchor = xpos[link] + rot(xquat[link]) @ np.array([-0.5, 0.0, 0.0])
    v_anchor = qd[0:3] + np.cross(w_base, anchor - xpos[base])
    v_link = v_anchor + np.cross(w_link, xpos[link] - anchor)
    np.testing.assert_allclose(got["body.link.angvel"], w_link, atol=VEL_TOL)
    np.testing.assert_allclose(got["body.link.vel"], v_link, atol=VEL_TOL)
    tip = xpos[link] + rot(xquat[link]) @ np.array([0.3, 0.0, 0.0])
    np.testing.assert_allclose(got["body.tip.vel"],
                               v_link + np.cross(w_link, tip - xpos[link]), atol=VEL_TOL)
    # centre of mass from the model's masses and body-frame centres (the welded tip's sphere adds to
    # the link's): Σ m (x + R c) / Σ m, and its velocity Σ m (v + ω × R c) / Σ m
    mass = np.asarray(model.body_mass, np.float64)
    com = np.asarray(model.body_com, np.float64)
    arm_base, arm_link = r_base @ com[base], rot(xquat[link]) @ com[link]
    total = mass[base] + mass[link]
    want_pos = (mass[base] * (xpos[base] + arm_base) + mass[link] * (xpos[link] + arm_link)) / total
    want_vel = (mass[base] * (qd[0:3] + np.cross(w_base, arm_base))
                + mass[link] * (v_link + np.cross(w_link, arm_link))) / total
    np.testing.assert_allclose(got["com.pos"], want_pos, atol=VEL_TOL)
    np.testing.assert_allclose(got["com.vel"], want_vel, atol=VEL_TOL)


def test_norm_gradient_is_finite_at_zero():
    import jax
    import jax.numpy as jnp

    from scenec.runtime.task import _safe_norm

    g = jax.grad(_safe_norm)(jnp.zeros(3))
    assert np.all(np.isfinite(np.asarray(g)))


def test_task_json_round_trip():
    from scenec.runtime.task import TaskSpec

    spec = _compiled()[0].task
    assert TaskSpec.from_json(spec.to_json()) == spec


def test_ant_task():
    from scenec.compiler.api import analyse

    analysis = analyse(str(SCENES_DIR / "ant.yaml"))
    assert analysis.ok
    _, checked = check_task(analysis.loaded)
    sizes = [t.typed.type.size for t in checked.observations]
    assert sum(sizes) == 1 + 4 + 8 + 14 + 27
    assert [t.name for t in checked.reward] == ["forward", "survive", "control", "contact"]
    assert [t.weight for t in checked.reward] == [1.0, 1.0, -0.5, -5e-4]


def test_scene_message_task_checks():
    """The same task built in Python (a message, no file) checks and compiles."""
    scene = load(ARM).scene
    scene.task.reward.add(name="up", expr="body.base.zaxis.z")
    assert isinstance(scene, scene_pb2.Scene)
    diagnostics, checked = check_task(load(scene))
    assert not [d for d in diagnostics if d.is_error]
    assert checked.reward[0].name == "up"

"""Lowering: the analysed IR → `runtime.Model` (numpy structure + jax value arrays).

Where it sits: after the last pass, before `emit`. Everything the step branches on while tracing
(counts, joint kinds, the dof tree, pair groups, substeps, solver iterations) becomes a static field;
everything else becomes a jax array of the scene's precision.

Per-pair contact parameters combine the two colliders' values: friction is the larger of the two
(MuJoCo's rule), restitution the larger, the contact time constant the larger (the softer contact wins)
and the damping ratio the mean; an explicit `contacts.pairs` entry overrides friction and restitution.
"""

from __future__ import annotations

import numpy as np

from scenec.runtime.collision_table import Shape

from . import ir
from .ir import Kind
from .passes.topology import relative_pose


def q0_of(scene: ir.SceneIR, values=None) -> tuple[np.ndarray, np.ndarray]:
    """Initial q and qd: the authored pose (hinge/slide at `reference`, ball at identity, free at the
    body's authored world pose), overridden by `values` (JointValue entries; default `scene.init`)."""
    topo = scene.topology
    joints = {j.name: j for j in scene.joints}
    q = np.zeros(topo.nq)
    qd = np.zeros(topo.nv)
    for k, name in enumerate(topo.joints):
        j = joints[name]
        a = topo.jnt_qpos_adr[k]
        if j.kind == Kind.FREE:
            b = scene.body(j.child)
            q[a:a + 3] = b.pos
            q[a + 3:a + 7] = b.quat
        elif j.kind == Kind.BALL:
            q[a:a + 4] = (1.0, 0.0, 0.0, 0.0)
        else:
            q[a] = j.reference
    index = {name: k for k, name in enumerate(topo.joints)}
    for v in (scene.init if values is None else values):
        if v.joint not in index:
            continue
        k = index[v.joint]
        a, d = topo.jnt_qpos_adr[k], topo.jnt_dof_adr[k]
        kind = joints[v.joint].kind
        if v.q:
            q[a:a + Kind.NQ[kind]] = v.q
        if v.qd:
            qd[d:d + Kind.NV[kind]] = v.qd
    return q, qd


def combine_pair(c1: ir.Collider, c2: ir.Collider, rule: ir.ColliderPairRule | None):
    friction = max(c1.friction, c2.friction)
    restitution = max(c1.restitution, c2.restitution)
    if rule is not None:
        friction = rule.friction if rule.friction is not None else friction
        restitution = rule.restitution if rule.restitution is not None else restitution
    solref = (max(c1.solref[0], c2.solref[0]), 0.5 * (c1.solref[1] + c2.solref[1]))
    return friction, restitution, solref


def lower(scene: ir.SceneIR):
    """Build the runtime model. Imports jax (through scenec.runtime)."""
    import jax.numpy as jnp

    from scenec.runtime import collision_data
    from scenec.runtime.types import Model, PairGroup, Static

    topo = scene.topology
    opts = scene.options
    dtype = np.float64 if opts.precision == "float64" else np.float32

    def arr(x, shape=None):
        a = np.asarray(x, dtype=np.float64)
        if shape is not None:
            a = a.reshape(shape)
        return jnp.asarray(a.astype(dtype))

    bodies = scene.bodies  # world first, topological order (topology pass)
    nbody = len(bodies)
    joints_by_name = {j.name: j for j in scene.joints}
    joints = [joints_by_name[n] for n in topo.joints]
    njnt = len(joints)
    nv, nq = topo.nv, topo.nq

    body_pos = np.zeros((nbody, 3))
    body_quat = np.tile([1.0, 0.0, 0.0, 0.0], (nbody, 1))
    body_mass = np.zeros(nbody)
    body_com = np.zeros((nbody, 3))
    body_inertia = np.zeros((nbody, 3, 3))
    for i, b in enumerate(bodies):
        if i == 0:
            continue
        p = bodies[topo.parent[i]]
        body_pos[i], body_quat[i] = relative_pose(p.pos, p.quat, b.pos, b.quat)
        body_mass[i] = b.props.mass
        body_com[i] = b.props.com
        body_inertia[i] = b.props.inertia

    body_jnt_adr = np.full(nbody, -1)
    body_jnt_num = np.zeros(nbody, int)
    body_dof_adr = np.full(nbody, -1)
    body_dof_num = np.zeros(nbody, int)
    for k, j in enumerate(joints):
        bi = topo.jnt_body[k]
        if body_jnt_adr[bi] < 0:
            body_jnt_adr[bi] = k
            body_dof_adr[bi] = topo.jnt_dof_adr[k]
        body_jnt_num[bi] += 1
        body_dof_num[bi] += Kind.NV[j.kind]
    body_jnt_adr = np.where(body_jnt_adr < 0, 0, body_jnt_adr)
    body_dof_adr = np.where(body_dof_adr < 0, 0, body_dof_adr)

    jnt_range = np.zeros((njnt, 2))
    jnt_limited = np.zeros(njnt, bool)
    dof_body, dof_jnt = [], []
    dof_damping, dof_armature, dof_stiffness, dof_spring_ref = [], [], [], []
    for k, j in enumerate(joints):
        if j.range is not None:
            jnt_range[k] = j.range
            jnt_limited[k] = True
        for _ in range(Kind.NV[j.kind]):
            dof_body.append(topo.jnt_body[k])
            dof_jnt.append(k)
            dof_damping.append(j.damping)
            dof_armature.append(j.armature)
            dof_stiffness.append(j.stiffness)
            dof_spring_ref.append(j.spring_reference)

    jnt_index = {n: k for k, n in enumerate(topo.joints)}
    acts = scene.actuators
    nu = len(acts)

    geoms = [(bi, c) for bi, b in enumerate(bodies) for c in b.colliders]
    geom_index = {c.name: g for g, (_, c) in enumerate(geoms)}
    meshes = {me.name: me for me in scene.meshes}
    hfields = {h.name: h for h in scene.hfields}
    geom_mesh, geom_hfield = [], []
    budget = mesh_budget(scene)
    reach = heightfield_reach(scene)
    for _, c in geoms:
        if c.shape == Shape.MESH:
            me = meshes[c.mesh]
            geom_mesh.append(collision_data.convex_mesh_data(
                np.asarray(me.hull_vertices), np.asarray(me.hull_faces), **budget))
        else:
            geom_mesh.append(None)
        if c.shape == Shape.HEIGHTFIELD:
            h = hfields[c.hfield]
            geom_hfield.append(collision_data.heightfield_data(
                np.asarray(h.elevation).reshape(h.nrow, h.ncol), h.size_x, h.size_y,
                reach=reach.get(c.name)))
        else:
            geom_hfield.append(None)

    rules = {}
    for r in scene.contacts.pairs:
        rules[(r.first, r.second)] = rules[(r.second, r.first)] = r
    groups, pair_friction, pair_restitution, pair_solref = [], [], [], []
    for grp in scene.groups or ():
        g1 = [geom_index[a] for a, _ in grp.pairs]
        g2 = [geom_index[b] for _, b in grp.pairs]
        groups.append(PairGroup(grp.kernel, Static(np.asarray(g1, np.int32)),
                                Static(np.asarray(g2, np.int32)), grp.ncon))
        for a, b in grp.pairs:
            f, e, s = combine_pair(geoms[geom_index[a]][1], geoms[geom_index[b]][1], rules.get((a, b)))
            pair_friction.append(f)
            pair_restitution.append(e)
            pair_solref.append(s)

    q0, qd0 = q0_of(scene)
    i32 = lambda x: Static(np.asarray(x, np.int32))  # noqa: E731

    return Model(
        name=scene.name, nbody=nbody, njnt=njnt, nq=nq, nv=nv, nu=nu, ngeom=len(geoms),
        body_parent_id=i32(topo.parent), body_root_id=i32(topo.root),
        body_jnt_adr=i32(body_jnt_adr), body_jnt_num=i32(body_jnt_num),
        body_dof_adr=i32(body_dof_adr), body_dof_num=i32(body_dof_num),
        jnt_kind=i32([j.kind for j in joints]), jnt_body_id=i32(topo.jnt_body),
        jnt_qpos_adr=i32(topo.jnt_qpos_adr), jnt_dof_adr=i32(topo.jnt_dof_adr),
        jnt_limited=Static(jnt_limited),
        dof_body_id=i32(dof_body), dof_jnt_id=i32(dof_jnt), dof_parent_id=i32(topo.dof_parent),
        actuator_jnt_id=i32([jnt_index[a.joint] for a in acts]),
        actuator_kind=i32([a.kind for a in acts]),
        actuator_ctrl_limited=Static(np.asarray([a.ctrl_range is not None for a in acts], bool)),
        actuator_force_limited=Static(np.asarray([a.force_range is not None for a in acts], bool)),
        geom_body_id=i32([bi for bi, _ in geoms]), geom_shape=i32([int(c.shape) for _, c in geoms]),
        pair_groups=tuple(groups), pair_bounce=Static(np.asarray([e > 0 for e in pair_restitution], bool)),
        substeps=opts.substeps, solver_iterations=opts.solver_iterations, contact_budget=opts.contact_budget,
        limit_budget=opts.limit_budget,
        cone=opts.cone, integrator=opts.integrator, dtype=np.dtype(dtype).name,
        body_names=tuple(b.name for b in bodies), jnt_names=tuple(topo.joints),
        actuator_names=tuple(a.name for a in acts), geom_names=tuple(c.name for _, c in geoms),
        timestep=arr(opts.timestep), gravity=arr(opts.gravity),
        body_pos=arr(body_pos), body_quat=arr(body_quat), body_mass=arr(body_mass),
        body_com=arr(body_com), body_inertia=arr(body_inertia),
        jnt_anchor=arr([j.anchor for j in joints], (njnt, 3)),
        jnt_axis=arr([j.axis for j in joints], (njnt, 3)),
        jnt_reference=arr([j.reference for j in joints], (njnt,)),
        jnt_range=arr(jnt_range, (njnt, 2)),
        jnt_limit_solref=arr([j.limit_solref for j in joints], (njnt, 2)),
        dof_damping=arr(dof_damping, (nv,)), dof_armature=arr(dof_armature, (nv,)),
        dof_stiffness=arr(dof_stiffness, (nv,)), dof_spring_ref=arr(dof_spring_ref, (nv,)),
        actuator_gear=arr([a.gear for a in acts], (nu,)),
        actuator_ctrl_range=arr([a.ctrl_range or (0.0, 0.0) for a in acts], (nu, 2)),
        actuator_force_range=arr([a.force_range or (0.0, 0.0) for a in acts], (nu, 2)),
        actuator_gain=arr([a.gain for a in acts], (nu, 3)),
        actuator_bias=arr([a.bias for a in acts], (nu, 3)),
        geom_pos=arr([c.pos for _, c in geoms], (len(geoms), 3)),
        geom_quat=arr([c.quat for _, c in geoms], (len(geoms), 4)),
        geom_size=arr([c.size for _, c in geoms], (len(geoms), 3)),
        geom_friction=arr([c.friction for _, c in geoms], (len(geoms),)),
        geom_restitution=arr([c.restitution for _, c in geoms], (len(geoms),)),
        geom_solref=arr([c.solref for _, c in geoms], (len(geoms), 2)),
        geom_rgba=arr([c.rgba or default_rgba(c) for _, c in geoms], (len(geoms), 4)),
        geom_mesh=tuple(geom_mesh), geom_hfield=tuple(geom_hfield),
        pair_friction=arr(pair_friction, (len(pair_friction),)),
        pair_restitution=arr(pair_restitution, (len(pair_restitution),)),
        pair_solref=arr(pair_solref, (len(pair_solref), 2)),
        q0=arr(q0, (nq,)), qd0=arr(qd0, (nv,)),
    )


def mesh_budget(scene: ir.SceneIR) -> dict:
    """Static padding budgets shared by every mesh of the scene: the largest merged hull decides,
    rounded up (collision_table.round_budget) so that similar scenes share compiled shapes."""
    from scenec.runtime import collision_data
    from scenec.runtime.collision_table import round_budget

    counts = [collision_data.convex_mesh_counts(np.asarray(me.hull_vertices), np.asarray(me.hull_faces))
              for me in scene.meshes if me.hull_vertices]
    nv, nf, ne = (max(c[k] for c in counts) if counts else 4 for k in range(3))
    return {"vertex_budget": round_budget(nv), "face_budget": round_budget(nf), "edge_budget": round_budget(ne)}


HEIGHTFIELD_MARGIN = 0.05   # m: how far beyond a partner's bounding radius its height-field window reaches


def heightfield_reach(scene: ir.SceneIR) -> dict:
    """For each height-field collider, the largest bounding radius among the colliders it may touch
    (plus a margin): its kernels then examine only the cells within that reach of a partner."""
    from .passes.pruning import collider_ball

    colliders = {c.name: c for b in scene.bodies for c in b.colliders}
    meshes = {me.name: me for me in scene.meshes}
    reach: dict[str, float] = {}
    for v in scene.pairs or ():
        if not v.kept:
            continue
        for hf, other in ((v.collider1, v.collider2), (v.collider2, v.collider1)):
            if colliders[hf].hfield is not None:
                radius = collider_ball(colliders[other], meshes)[1]
                if np.isfinite(radius):
                    reach[hf] = max(reach.get(hf, 0.0), radius + HEIGHTFIELD_MARGIN)
    return reach


def default_rgba(c: ir.Collider) -> tuple:
    """Display colour when the author gave none: ground grey, movers a warm tone."""
    if c.shape in (Shape.PLANE, Shape.HEIGHTFIELD):
        return (0.55, 0.6, 0.65, 1.0)
    return (0.85, 0.55, 0.3, 1.0)

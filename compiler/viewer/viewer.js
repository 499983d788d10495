// scenec viewer: draws a compiled scene and plays a trajectory with WebGL 1, no libraries.
//
// The page embeds one JSON object (see compiler/viewer/__init__.py): triangles of every collider in
// its body's frame, uploaded once; per frame the viewer computes one transform per body and
// environment from the trajectory (interpolated between recorded frames), uploads them in one
// buffer, and draws each body's triangles once for all environments (instanced: the transform is a
// per-instance attribute), so the number of draw calls does not grow with the environments. Hovering picks the collider under the mouse by drawing collider ids into a
// one-pixel region of an offscreen buffer. The camera orbits a target point (azimuth, elevation,
// distance) with a 45° vertical field of view; `window.scenecViewer` exposes it, and a few hooks,
// to tests.
(function () {
  "use strict";

  const FOVY_DEG = 45;
  const LIGHT = normalize([-0.35, -0.5, 1.0]);      // the same light as runtime/render.py
  const JOINT_COLORS = [[1.0, 0.55, 0.1, 1], [0.1, 0.8, 0.9, 1], [0.9, 0.2, 0.9, 1], [0.5, 0.5, 0.5, 1]];
  const CONTACT_COLOR = [1.0, 0.15, 0.1, 1];
  // Eight attributes, WebGL 1's guaranteed minimum: uvp packs the plane coordinates, the checkerboard
  // flag and the collider id; m0..m3 are the columns of a body's transform, with the environment's
  // index stored in m0.w (the transform's bottom row is always 0, 0, 0, 1).
  const ATTR = { pos: 0, normal: 1, color: 2, uvp: 3, m0: 4, m1: 5, m2: 6, m3: 7 };

  const statusEl = document.getElementById("status");
  const canvas = document.getElementById("view");

  function fail(message) {
    const div = document.createElement("div");
    div.id = "error";
    div.textContent = message;
    document.body.appendChild(div);
    console.error("scenec viewer: " + message);
  }

  // ---------------------------------------------------------------------------------- data
  const data = JSON.parse(document.getElementById("scenec-data").textContent);

  function decode(text, Type) {
    const bin = atob(text);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Type(bytes.buffer);
  }

  const T = data.frames.T, E = data.frames.E, NB = data.frames.nbody;
  const times = decode(data.frames.time, Float32Array);
  const xpos = decode(data.frames.xpos, Float32Array);
  const xquat = decode(data.frames.xquat, Float32Array);
  const contacts = data.contacts && data.contacts.count > 0 ? {
    offsets: decode(data.contacts.offsets, Int32Array),
    points: decode(data.contacts.points, Float32Array),
  } : null;
  const offsets = data.env_offsets;
  const ngeom = data.geoms.length;

  // ------------------------------------------------------------------------------- vectors
  function normalize(v) {
    const n = Math.hypot(v[0], v[1], v[2]) || 1;
    return [v[0] / n, v[1] / n, v[2] / n];
  }
  function cross(a, b) {
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  }
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

  // Column-major 4x4 matrices, as WebGL expects.
  function perspective(fovy, aspect, near, far) {
    const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
    return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1,
      0, 0, 2 * far * near * nf, 0]);
  }
  function lookAt(eye, target, up) {
    const f = normalize(sub(target, eye));
    const r = normalize(cross(f, up));
    const u = cross(r, f);
    return new Float32Array([r[0], u[0], -f[0], 0, r[1], u[1], -f[1], 0, r[2], u[2], -f[2], 0,
      -dot(r, eye), -dot(u, eye), dot(f, eye), 1]);
  }
  function multiply(a, b) {
    const out = new Float32Array(16);
    for (let c = 0; c < 4; c++) {
      for (let r = 0; r < 4; r++) {
        let s = 0;
        for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
        out[c * 4 + r] = s;
      }
    }
    return out;
  }
  // Rigid transform from a position and a unit quaternion (w, x, y, z), written into out at o.
  function poseMatrix(out, o, px, py, pz, w, x, y, z) {
    out[o] = 1 - 2 * (y * y + z * z); out[o + 1] = 2 * (x * y + w * z); out[o + 2] = 2 * (x * z - w * y); out[o + 3] = 0;
    out[o + 4] = 2 * (x * y - w * z); out[o + 5] = 1 - 2 * (x * x + z * z); out[o + 6] = 2 * (y * z + w * x); out[o + 7] = 0;
    out[o + 8] = 2 * (x * z + w * y); out[o + 9] = 2 * (y * z - w * x); out[o + 10] = 1 - 2 * (x * x + y * y); out[o + 11] = 0;
    out[o + 12] = px; out[o + 13] = py; out[o + 14] = pz; out[o + 15] = 1;
  }

  // ------------------------------------------------------------------------------- WebGL
  const gl = canvas.getContext("webgl", { antialias: true, preserveDrawingBuffer: true, stencil: true });
  if (!gl) {
    fail("this browser cannot draw WebGL, which the viewer needs");
    return;
  }

  const SHADE_VS = `
    attribute vec3 a_pos; attribute vec3 a_normal; attribute vec4 a_color; attribute vec4 a_uvp;
    attribute vec4 a_m0; attribute vec4 a_m1; attribute vec4 a_m2; attribute vec4 a_m3;
    uniform mat4 u_viewproj; uniform float u_hlEnv; uniform float u_hlOn;
    varying vec3 v_world; varying vec3 v_normal; varying vec4 v_color; varying vec3 v_uvp;
    varying float v_geom; varying float v_env; varying float v_highlight;
    void main() {
      mat4 model = mat4(vec4(a_m0.xyz, 0.0), a_m1, a_m2, a_m3);
      vec4 w = model * vec4(a_pos, 1.0);
      v_world = w.xyz;
      v_normal = (model * vec4(a_normal, 0.0)).xyz;
      v_color = a_color; v_uvp = a_uvp.xyz; v_geom = a_uvp.w; v_env = a_m0.w;
      v_highlight = u_hlOn * (1.0 - step(0.5, abs(a_m0.w - u_hlEnv)));
      gl_Position = u_viewproj * w;
    }`;
  const SHADE_FS = `
    precision highp float;
    uniform vec3 u_light; uniform vec3 u_eye; uniform float u_checker; uniform float u_focal;
    varying vec3 v_world; varying vec3 v_normal; varying vec4 v_color; varying vec3 v_uvp;
    varying float v_highlight;
    void main() {
      vec3 n = normalize(v_normal);
      vec3 view = normalize(v_world - u_eye);
      if (dot(n, view) > 0.0) n = -n;
      vec3 base = pow(v_color.rgb, vec3(2.2));
      if (v_uvp.z > 0.5 && u_checker > 0.0) {
        float cell = floor(v_uvp.x / u_checker) + floor(v_uvp.y / u_checker);
        float dark = mod(cell, 2.0);
        float footprint = length(v_world - u_eye) / (u_focal * max(abs(dot(n, view)), 0.05));
        float contrast = clamp(1.5 - 2.0 * footprint / u_checker, 0.0, 1.0);
        float scale = mix(1.0, 0.72, dark) * contrast + 0.86 * (1.0 - contrast);
        base *= scale;
      }
      float lambert = max(dot(n, u_light), 0.0);
      vec3 h = normalize(u_light - view);
      float spec = 0.18 * pow(max(dot(n, h), 0.0), 24.0) * lambert;
      vec3 c = base * (0.32 + 0.68 * lambert) + spec;
      c = mix(c, vec3(1.0, 0.8, 0.25), 0.4 * v_highlight);
      gl_FragColor = vec4(pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)), 1.0);
    }`;
  const PICK_FS = `
    precision highp float;
    uniform float u_ngeom;
    varying float v_geom; varying float v_env;
    void main() {
      float id = floor(v_env + 0.5) * u_ngeom + floor(v_geom + 0.5) + 1.0;
      float r = mod(id, 256.0); float g = mod(floor(id / 256.0), 256.0); float b = floor(id / 65536.0);
      gl_FragColor = vec4(r, g, b, 255.0) / 255.0;
    }`;
  const FLAT_VS = `
    attribute vec3 a_pos;
    attribute vec4 a_m0; attribute vec4 a_m1; attribute vec4 a_m2; attribute vec4 a_m3;
    uniform mat4 u_viewproj; uniform float u_size;
    void main() {
      gl_Position = u_viewproj * mat4(vec4(a_m0.xyz, 0.0), a_m1, a_m2, a_m3) * vec4(a_pos, 1.0);
      gl_PointSize = u_size;
    }`;
  const FLAT_FS = `
    precision mediump float;
    uniform vec4 u_color; uniform float u_round;
    void main() {
      if (u_round > 0.5 && length(gl_PointCoord - vec2(0.5)) > 0.5) discard;
      gl_FragColor = u_color;
    }`;

  function compile(type, source) {
    const s = gl.createShader(type);
    gl.shaderSource(s, source);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
    return s;
  }
  function program(vs, fs) {
    const p = gl.createProgram();
    gl.attachShader(p, compile(gl.VERTEX_SHADER, vs));
    gl.attachShader(p, compile(gl.FRAGMENT_SHADER, fs));
    for (const [name, loc] of Object.entries(ATTR)) gl.bindAttribLocation(p, loc, "a_" + name);
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
    const u = {};
    const n = gl.getProgramParameter(p, gl.ACTIVE_UNIFORMS);
    for (let i = 0; i < n; i++) {
      const name = gl.getActiveUniform(p, i).name;
      u[name] = gl.getUniformLocation(p, name);
    }
    return { p, u };
  }
  const shade = program(SHADE_VS, SHADE_FS);
  const pick = program(SHADE_VS, PICK_FS);
  const flat = program(FLAT_VS, FLAT_FS);

  function buffer(array) {
    const b = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, b);
    gl.bufferData(gl.ARRAY_BUFFER, array, gl.STATIC_DRAW);
    return b;
  }
  const V = data.vertices;
  // Triangles are indexed (uint32). WebGL 1 needs an extension for 32-bit indices; without it the
  // attribute arrays are expanded so that plain drawArrays works (more memory, same picture).
  let indices = decode(data.indices, Uint32Array);
  const uintIndices = gl.getExtension("OES_element_index_uint");
  function attribute(text, Type, size) {
    const a = decode(text, Type);
    if (uintIndices) return a;
    const out = new Type(indices.length * size);
    for (let i = 0; i < indices.length; i++) {
      for (let k = 0; k < size; k++) out[i * size + k] = a[indices[i] * size + k];
    }
    return out;
  }
  const vbo = {
    pos: buffer(attribute(V.position, Float32Array, 3)),
    normal: buffer(attribute(V.normal, Float32Array, 3)),
    color: buffer(attribute(V.color, Uint8Array, 4)),
    uvp: buffer(attribute(V.uvp, Float32Array, 4)),
  };
  const ibo = gl.createBuffer();
  gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ibo);
  gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, uintIndices ? indices : new Uint32Array(0), gl.STATIC_DRAW);
  indices = null;
  function bindMeshAttributes() {
    const spec = [["pos", 3, gl.FLOAT, false], ["normal", 3, gl.FLOAT, false],
      ["color", 4, gl.UNSIGNED_BYTE, true], ["uvp", 4, gl.FLOAT, false]];
    for (const [name, size, type, norm] of spec) {
      gl.bindBuffer(gl.ARRAY_BUFFER, vbo[name]);
      gl.enableVertexAttribArray(ATTR[name]);
      gl.vertexAttribPointer(ATTR[name], size, type, norm, 0, 0);
    }
  }
  function bindFlatAttributes(buf) {
    for (let i = 1; i <= 3; i++) gl.disableVertexAttribArray(i);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf);
    gl.enableVertexAttribArray(ATTR.pos);
    gl.vertexAttribPointer(ATTR.pos, 3, gl.FLOAT, false, 0, 0);
  }

  // Per-instance transforms: `models` (E × nbody × 16 floats, environment-major) is copied body-major
  // into `instances` and uploaded once per frame, so that body b's E transforms are contiguous
  // (WebGL caps an attribute's stride at 255 bytes, so they cannot be strided through `models`).
  // Without the instancing extension (rare), the same numbers go in as constant attributes, one draw
  // per environment.
  const inst = gl.getExtension("ANGLE_instanced_arrays");
  const instanceVbo = gl.createBuffer();
  const IDENTITY = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  const identityVbo = buffer(IDENTITY);
  function drawSet(mode, first, count, body, instances, indexed) {
    const byIndex = indexed && uintIndices;
    if (inst) {
      const world = body < 0;
      gl.bindBuffer(gl.ARRAY_BUFFER, world ? identityVbo : instanceVbo);
      for (let c = 0; c < 4; c++) {
        gl.enableVertexAttribArray(ATTR.m0 + c);
        gl.vertexAttribPointer(ATTR.m0 + c, 4, gl.FLOAT, false, 64, (world ? 0 : body * E * 64) + c * 16);
        inst.vertexAttribDivisorANGLE(ATTR.m0 + c, 1);
      }
      if (byIndex) inst.drawElementsInstancedANGLE(mode, count, gl.UNSIGNED_INT, first * 4, instances);
      else inst.drawArraysInstancedANGLE(mode, first, count, instances);
      return;
    }
    for (let c = 0; c < 4; c++) gl.disableVertexAttribArray(ATTR.m0 + c);
    for (let e = 0; e < instances; e++) {
      const m = body < 0 ? IDENTITY : models.subarray((e * NB + body) * 16, (e * NB + body + 1) * 16);
      for (let c = 0; c < 4; c++) gl.vertexAttrib4f(ATTR.m0 + c, m[c * 4], m[c * 4 + 1], m[c * 4 + 2], m[c * 4 + 3]);
      if (byIndex) gl.drawElements(mode, count, gl.UNSIGNED_INT, first * 4);
      else gl.drawArrays(mode, first, count);
    }
  }

  // Joint axes, in their bodies' frames: a line along the axis through the anchor (hinge, slide)
  // or the three frame axes (ball). Free joints have no axis to show.
  const axisLength = 0.35 * Math.max(data.radius, 1e-3);
  const jointLines = [], jointDraws = [];
  for (const j of data.joints) {
    if (j.kind === 3) continue;
    const first = jointLines.length / 3;
    const axes = j.kind === 2 ? [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : [normalize(j.axis)];
    for (const a of axes) {
      for (const s of [-0.5, 1.0]) {
        jointLines.push(j.anchor[0] + s * axisLength * a[0], j.anchor[1] + s * axisLength * a[1],
          j.anchor[2] + s * axisLength * a[2]);
      }
    }
    jointLines.push(j.anchor[0], j.anchor[1], j.anchor[2]);
    jointDraws.push({ body: j.body, first, lines: jointLines.length / 3 - 1 - first, kind: j.kind });
  }
  const jointVbo = buffer(new Float32Array(jointLines.length ? jointLines : [0, 0, 0]));
  const contactVbo = gl.createBuffer();
  let contactScratch = new Float32Array(0);

  // ---------------------------------------------------------------------------- camera
  const cam = { target: data.center.slice(), az: 0, el: 0, dist: 1 };
  function frameAll() {
    const spread = offsets.reduce((m, o) => Math.max(m, Math.hypot(o[0], o[1])), 0);
    const r = data.radius + spread;
    cam.target = [data.center[0], data.center[1], data.center[2]];
    cam.az = Math.PI / 4;
    cam.el = 25 * Math.PI / 180;
    cam.dist = 1.4 * r / Math.sin(FOVY_DEG * Math.PI / 360);   // render.FRAMING_MARGIN
  }
  frameAll();
  function eye() {
    const c = Math.cos(cam.el);
    return [cam.target[0] + cam.dist * c * Math.cos(cam.az), cam.target[1] + cam.dist * c * Math.sin(cam.az),
      cam.target[2] + cam.dist * Math.sin(cam.el)];
  }

  // ------------------------------------------------------------------------- playback
  const ui = {
    play: document.getElementById("play"), scrub: document.getElementById("scrub"),
    time: document.getElementById("time"), speed: document.getElementById("speed"),
    joints: document.getElementById("joints"), contacts: document.getElementById("contacts"),
    follow: document.getElementById("follow"), env: document.getElementById("env"),
    shadows: document.getElementById("shadows"),
    envLabel: document.getElementById("env-label"), reset: document.getElementById("reset"),
    tip: document.getElementById("tip"),
  };
  const state = { t: times[0], playing: false, last: null, hover: null, mouse: null, pickDirty: false };
  ui.scrub.max = String(T - 1);
  if (T < 2) { ui.play.disabled = true; ui.scrub.disabled = true; }
  if (!contacts) { ui.contacts.disabled = true; ui.contacts.parentElement.title = "the trajectory has no contact points"; }
  if (!jointDraws.length) ui.joints.disabled = true;
  if (E > 1) {
    ui.envLabel.hidden = false;
    for (let e = 0; e < E; e++) {
      const o = document.createElement("option");
      o.value = String(e);
      o.textContent = String(e);
      ui.env.appendChild(o);
    }
  }

  // Index of the last recorded frame at or before time t (binary search; times never decrease).
  function frameAt(t) {
    let lo = 0, hi = T - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (times[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  const models = new Float32Array(E * NB * 16);
  const instances = new Float32Array(E * NB * 16);
  // Body transforms at time t: positions interpolated linearly, orientations by normalised lerp
  // (frames are close together, so this is indistinguishable from slerp and cheaper).
  function computePoses(t) {
    const k = frameAt(t);
    const k1 = Math.min(k + 1, T - 1);
    const span = times[k1] - times[k];
    const a = span > 0 ? Math.min(Math.max((t - times[k]) / span, 0), 1) : 0;
    for (let e = 0; e < E; e++) {
      const off = offsets[e];
      for (let b = 0; b < NB; b++) {
        const i0 = (k * E + e) * NB + b, i1 = (k1 * E + e) * NB + b;
        const p0 = i0 * 3, p1 = i1 * 3, q0 = i0 * 4, q1 = i1 * 4;
        const sgn = xquat[q0] * xquat[q1] + xquat[q0 + 1] * xquat[q1 + 1] + xquat[q0 + 2] * xquat[q1 + 2]
          + xquat[q0 + 3] * xquat[q1 + 3] < 0 ? -1 : 1;
        let w = (1 - a) * xquat[q0] + a * sgn * xquat[q1], x = (1 - a) * xquat[q0 + 1] + a * sgn * xquat[q1 + 1];
        let y = (1 - a) * xquat[q0 + 2] + a * sgn * xquat[q1 + 2], z = (1 - a) * xquat[q0 + 3] + a * sgn * xquat[q1 + 3];
        const n = Math.hypot(w, x, y, z) || 1;
        w /= n; x /= n; y /= n; z /= n;
        poseMatrix(models, (e * NB + b) * 16,
          (1 - a) * xpos[p0] + a * xpos[p1] + off[0], (1 - a) * xpos[p0 + 1] + a * xpos[p1 + 1] + off[1],
          (1 - a) * xpos[p0 + 2] + a * xpos[p1 + 2] + off[2], w, x, y, z);
        models[(e * NB + b) * 16 + 3] = e;
      }
    }
    if (inst) {
      for (let b = 0; b < NB; b++) {
        for (let e = 0; e < E; e++) instances.set(models.subarray((e * NB + b) * 16, (e * NB + b + 1) * 16), (b * E + e) * 16);
      }
      gl.bindBuffer(gl.ARRAY_BUFFER, instanceVbo);
      gl.bufferData(gl.ARRAY_BUFFER, instances, gl.DYNAMIC_DRAW);
    }
    return k;
  }

  // The body the "follow" camera tracks: the first body below the world.
  const followBody = NB > 1 ? 1 : 0;

  // ---------------------------------------------------------------------------- drawing
  let viewproj = null, eyeNow = null, focalPx = 1;
  let pickTarget = null;

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(canvas.clientWidth * dpr)), h = Math.max(1, Math.round(canvas.clientHeight * dpr));
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
      pickTarget = null;
    }
  }

  function setupCamera() {
    eyeNow = eye();
    const aspect = canvas.width / canvas.height;
    const far = cam.dist * 4 + 4 * (data.radius + 1) + 60;
    const near = Math.max(cam.dist * 0.01, 1e-3);
    viewproj = multiply(perspective(FOVY_DEG * Math.PI / 180, aspect, near, far), lookAt(eyeNow, cam.target, [0, 0, 1]));
    focalPx = (canvas.height / 2) / Math.tan(FOVY_DEG * Math.PI / 360);
  }

  function drawBodies(prog, picking) {
    gl.useProgram(prog.p);
    bindMeshAttributes();
    gl.uniformMatrix4fv(prog.u.u_viewproj, false, viewproj);
    if (!picking) {
      gl.uniform3fv(prog.u.u_light, LIGHT);
      gl.uniform3fv(prog.u.u_eye, eyeNow);
      gl.uniform1f(prog.u.u_checker, data.checker);
      gl.uniform1f(prog.u.u_focal, focalPx);
      gl.uniform1f(prog.u.u_hlEnv, state.hover ? state.hover.env : -1);
    } else {
      gl.uniform1f(prog.u.u_ngeom, ngeom);
    }
    for (const d of data.draws) {
      // The world's ground is drawn once, untransformed; everything else once per environment (the
      // world's pose in `models` is its environment's offset).
      if (!picking) gl.uniform1f(prog.u.u_hlOn, state.hover && state.hover.body === d.body && d.body !== 0 ? 1 : 0);
      drawSet(gl.TRIANGLES, d.first, d.count, d.per_env ? d.body : -1, d.per_env ? E : 1, true);
    }
  }

  // Shadows on the ground: each body flattened onto the ground plane along the light, drawn dark and
  // translucent, each pixel darkened once (the stencil counts it). Only for a horizontal world plane.
  const SHADOW_LIFT = 1e-3 * Math.max(data.radius, 1e-3);
  const shadowMatrix = data.ground === null ? null : new Float32Array([1, 0, 0, 0, 0, 1, 0, 0,
    -LIGHT[0] / LIGHT[2], -LIGHT[1] / LIGHT[2], 0, 0,
    LIGHT[0] / LIGHT[2] * data.ground, LIGHT[1] / LIGHT[2] * data.ground, data.ground + SHADOW_LIFT, 1]);
  function drawShadows() {
    gl.useProgram(flat.p);
    bindFlatAttributes(vbo.pos);
    gl.uniformMatrix4fv(flat.u.u_viewproj, false, multiply(viewproj, shadowMatrix));
    gl.uniform4fv(flat.u.u_color, [0.0, 0.02, 0.05, 0.3]);
    gl.uniform1f(flat.u.u_round, 0);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
    gl.enable(gl.STENCIL_TEST);
    gl.stencilFunc(gl.EQUAL, 0, 0xff);
    gl.stencilOp(gl.KEEP, gl.KEEP, gl.INCR);
    gl.depthMask(false);
    for (const d of data.draws) {
      if (d.body !== 0) drawSet(gl.TRIANGLES, d.first, d.count, d.body, E, true);
    }
    gl.depthMask(true);
    gl.disable(gl.STENCIL_TEST);
    gl.disable(gl.BLEND);
  }

  function drawJoints() {
    gl.useProgram(flat.p);
    bindFlatAttributes(jointVbo);
    gl.uniformMatrix4fv(flat.u.u_viewproj, false, viewproj);
    gl.disable(gl.DEPTH_TEST);
    for (const j of jointDraws) {
      gl.uniform4fv(flat.u.u_color, JOINT_COLORS[j.kind]);
      gl.uniform1f(flat.u.u_round, 0);
      drawSet(gl.LINES, j.first, j.lines, j.body, E, false);
      gl.uniform1f(flat.u.u_round, 1);
      gl.uniform1f(flat.u.u_size, 6);
      drawSet(gl.POINTS, j.first + j.lines, 1, j.body, E, false);
    }
    gl.enable(gl.DEPTH_TEST);
  }

  function drawContacts(k) {
    const n = contacts.offsets[(k + 1) * E] - contacts.offsets[k * E];
    if (n <= 0) return;
    if (contactScratch.length < n * 3) contactScratch = new Float32Array(n * 3);
    let w = 0;
    for (let e = 0; e < E; e++) {
      const off = offsets[e];
      for (let i = contacts.offsets[k * E + e]; i < contacts.offsets[k * E + e + 1]; i++) {
        contactScratch[w++] = contacts.points[i * 3] + off[0];
        contactScratch[w++] = contacts.points[i * 3 + 1] + off[1];
        contactScratch[w++] = contacts.points[i * 3 + 2] + off[2];
      }
    }
    gl.useProgram(flat.p);
    gl.bindBuffer(gl.ARRAY_BUFFER, contactVbo);
    gl.bufferData(gl.ARRAY_BUFFER, contactScratch.subarray(0, w), gl.DYNAMIC_DRAW);
    bindFlatAttributes(contactVbo);
    gl.uniformMatrix4fv(flat.u.u_viewproj, false, viewproj);
    gl.uniform4fv(flat.u.u_color, CONTACT_COLOR);
    gl.uniform1f(flat.u.u_round, 1);
    gl.uniform1f(flat.u.u_size, 8);
    gl.disable(gl.DEPTH_TEST);
    drawSet(gl.POINTS, 0, n, -1, 1, false);
    gl.enable(gl.DEPTH_TEST);
  }

  let frameIndex = 0;
  function draw() {
    resize();
    frameIndex = computePoses(state.t);
    if (ui.follow.checked) {
      const e = E > 1 ? Number(ui.env.value) : 0;
      const m = (e * NB + followBody) * 16;
      cam.target = [models[m + 12], models[m + 13], models[m + 14]];
    }
    setupCamera();
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(0.79, 0.83, 0.87, 1);
    gl.clearStencil(0);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT | gl.STENCIL_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    drawBodies(shade, false);
    if (ui.shadows.checked && shadowMatrix) drawShadows();
    if (ui.joints.checked && jointDraws.length) drawJoints();
    if (ui.contacts.checked && contacts) drawContacts(frameIndex);
    ui.time.textContent = `t = ${state.t.toFixed(3)} s  (${frameIndex + 1}/${T})`;
    if (document.activeElement !== ui.scrub) ui.scrub.value = String(frameIndex);
    if (state.pickDirty && state.mouse) pickAt(state.mouse[0], state.mouse[1]);
  }

  // ---------------------------------------------------------------------------- picking
  function ensurePickTarget() {
    if (pickTarget) return pickTarget;
    const tex = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, tex);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, canvas.width, canvas.height, 0, gl.RGBA, gl.UNSIGNED_BYTE, null);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
    const depth = gl.createRenderbuffer();
    gl.bindRenderbuffer(gl.RENDERBUFFER, depth);
    gl.renderbufferStorage(gl.RENDERBUFFER, gl.DEPTH_COMPONENT16, canvas.width, canvas.height);
    const fb = gl.createFramebuffer();
    gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
    gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, tex, 0);
    gl.framebufferRenderbuffer(gl.FRAMEBUFFER, gl.DEPTH_ATTACHMENT, gl.RENDERBUFFER, depth);
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    pickTarget = { fb };
    return pickTarget;
  }

  // What is under CSS pixel (x, y): {env, body, geom} or null.
  function pickAt(x, y) {
    state.pickDirty = false;
    const dpr = canvas.width / Math.max(canvas.clientWidth, 1);
    const px = Math.floor(x * dpr), py = canvas.height - 1 - Math.floor(y * dpr);
    if (px < 0 || py < 0 || px >= canvas.width || py >= canvas.height) return setHover(null, x, y);
    const target = ensurePickTarget();
    gl.bindFramebuffer(gl.FRAMEBUFFER, target.fb);
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.enable(gl.SCISSOR_TEST);
    gl.scissor(px, py, 1, 1);
    gl.clearColor(0, 0, 0, 0);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    drawBodies(pick, true);
    const out = new Uint8Array(4);
    gl.readPixels(px, py, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, out);
    gl.disable(gl.SCISSOR_TEST);
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    const id = out[0] + out[1] * 256 + out[2] * 65536 - 1;
    if (id < 0) return setHover(null, x, y);
    const geom = id % ngeom, env = Math.floor(id / ngeom);
    return setHover({ env, geom, body: data.geoms[geom].body }, x, y);
  }

  function setHover(hit, x, y) {
    const changed = JSON.stringify(hit) !== JSON.stringify(state.hover);
    state.hover = hit;
    if (!hit) {
      ui.tip.hidden = true;
    } else {
      const g = data.geoms[hit.geom];
      ui.tip.textContent = "";
      const name = document.createElement("b");
      name.textContent = data.bodies[hit.body];
      ui.tip.appendChild(name);
      const detail = document.createElement("small");
      detail.textContent = `  ${g.shape} ${g.name}` + (E > 1 ? ` · env ${hit.env}` : "");
      ui.tip.appendChild(detail);
      ui.tip.hidden = false;
      ui.tip.style.left = `${x + 14}px`;
      ui.tip.style.top = `${y + 14}px`;
    }
    if (changed) requestDraw();
    return hit;
  }

  // ------------------------------------------------------------------------------ loop
  let drawQueued = false;
  function requestDraw() {
    if (!drawQueued) {
      drawQueued = true;
      requestAnimationFrame(tick);
    }
  }
  function tick(now) {
    drawQueued = false;
    if (state.playing) {
      if (state.last !== null) {
        state.t += (now - state.last) / 1000 * Number(ui.speed.value);
        if (state.t > times[T - 1]) state.t = times[0] + (state.t - times[T - 1]) % Math.max(times[T - 1] - times[0], 1e-9);
      }
      state.last = now;
    }
    draw();
    if (state.playing) requestDraw();
  }
  function setPlaying(on) {
    state.playing = on && T > 1;
    state.last = null;
    ui.play.textContent = state.playing ? "❚❚" : "▶";
    requestDraw();
  }
  function setFrame(k) {
    state.t = times[Math.min(Math.max(k, 0), T - 1)];
    requestDraw();
  }

  ui.play.addEventListener("click", () => setPlaying(!state.playing));
  ui.scrub.addEventListener("input", () => { setPlaying(false); setFrame(Number(ui.scrub.value)); });
  if (!shadowMatrix) ui.shadows.disabled = true;
  for (const el of [ui.speed, ui.joints, ui.contacts, ui.follow, ui.env, ui.shadows]) el.addEventListener("change", requestDraw);
  ui.reset.addEventListener("click", () => { ui.follow.checked = false; frameAll(); requestDraw(); });
  window.addEventListener("resize", requestDraw);
  window.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type !== "checkbox") return;
    if (ev.key === " ") { ev.preventDefault(); setPlaying(!state.playing); }
    else if (ev.key === "ArrowRight") { setPlaying(false); setFrame(frameAt(state.t) + 1); }
    else if (ev.key === "ArrowLeft") { setPlaying(false); setFrame(frameAt(state.t) - 1); }
  });

  // Orbit (left drag), pan (right drag, or shift/ctrl + left), zoom (wheel).
  let drag = null;
  canvas.addEventListener("contextmenu", (ev) => ev.preventDefault());
  canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, pan: ev.button === 2 || ev.shiftKey || ev.ctrlKey };
    canvas.setPointerCapture(ev.pointerId);
    canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointerup", (ev) => {
    drag = null;
    canvas.releasePointerCapture(ev.pointerId);
    canvas.classList.remove("dragging");
  });
  canvas.addEventListener("pointermove", (ev) => {
    state.mouse = [ev.clientX, ev.clientY];
    if (drag) {
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      drag.x = ev.clientX;
      drag.y = ev.clientY;
      if (drag.pan) {
        const e = eye();
        const f = normalize(sub(cam.target, e));
        const r = normalize(cross(f, [0, 0, 1]));
        const u = cross(r, f);
        const scale = 2 * cam.dist * Math.tan(FOVY_DEG * Math.PI / 360) / canvas.clientHeight;
        for (let i = 0; i < 3; i++) cam.target[i] += (-dx * r[i] + dy * u[i]) * scale;
        ui.follow.checked = false;
      } else {
        cam.az -= dx * 0.008;
        cam.el = Math.min(Math.max(cam.el + dy * 0.008, -1.5), 1.5);
      }
    }
    state.pickDirty = true;
    requestDraw();
  });
  canvas.addEventListener("pointerleave", () => { state.mouse = null; setHover(null, 0, 0); });
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    cam.dist *= Math.exp(Math.max(Math.min(ev.deltaY, 200), -200) * 0.0015);
    requestDraw();
  }, { passive: false });

  // ------------------------------------------------------------------------ test hooks
  window.scenecViewer = {
    ready: true,
    frames: T,
    envs: E,
    frame: () => frameIndex,
    playing: () => state.playing,
    play: () => setPlaying(true),
    pause: () => setPlaying(false),
    setFrame: (k) => { setPlaying(false); setFrame(k); draw(); },
    // The camera as a pinhole (see runtime/render.py): in CSS pixels of the canvas.
    camera: () => ({ eye: eye(), target: cam.target.slice(), up: [0, 0, 1], fovy: FOVY_DEG,
      width: canvas.clientWidth, height: canvas.clientHeight }),
    envOffsets: () => offsets.map((o) => o.slice()),
    pick: (x, y) => { draw(); const h = pickAt(x, y); return h && { env: h.env, body: data.bodies[h.body], geom: data.geoms[h.geom].name }; },
    tooltip: () => (ui.tip.hidden ? "" : ui.tip.textContent),
    // Milliseconds per drawn frame over n frames spread over the trajectory (waits for the GPU).
    benchmark: (n) => {
      const px = new Uint8Array(4);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        state.t = times[Math.floor(i * (T - 1) / Math.max(n - 1, 1))];
        draw();
        gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
      }
      return (performance.now() - t0) / n;
    },
  };
  statusEl.textContent = `${NB - 1} bodies · ${ngeom} colliders · ${T} frames` + (E > 1 ? ` · ${E} environments` : "");
  requestDraw();
})();

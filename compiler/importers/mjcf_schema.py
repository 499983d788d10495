"""What an MJCF file may contain, and what the importer does with each part.

Where it sits: data for compiler/importers/mjcf.py. `ELEMENTS` lists, for each element the importer
walks, the attributes MuJoCo accepts (None: not checked) and the children it may have; a name not
listed is an unknown element or attribute (E702/E703, with a did-you-mean). The other tables say
which known parts are unsupported (an error), ignored with a warning (they change the physics), or
dropped with a note (they do not). Names follow MuJoCo 3's XML reference.
"""

from __future__ import annotations

_FRAME = {"pos", "quat", "axisangle", "xyaxes", "zaxis", "euler"}
_ACTUATOR_COMMON = {
    "name", "class", "group", "ctrllimited", "forcelimited", "actlimited", "ctrlrange",
    "forcerange", "actrange", "lengthrange", "gear", "cranklength", "joint", "jointinparent",
    "tendon", "cranksite", "slidersite", "site", "refsite", "body", "user", "actdim", "actearly",
    "nsample", "interp", "delay",
}
ACTUATOR_ATTRS = {
    "motor": _ACTUATOR_COMMON,
    "position": _ACTUATOR_COMMON | {"kp", "kv", "dampratio", "timeconst", "inheritrange"},
    "velocity": _ACTUATOR_COMMON | {"kv"},
    "general": _ACTUATOR_COMMON | {"dyntype", "gaintype", "biastype", "dynprm", "gainprm", "biasprm"},
    "intvelocity": _ACTUATOR_COMMON | {"kp", "kv", "inheritrange"},
    "damper": _ACTUATOR_COMMON | {"kv"},
    "cylinder": _ACTUATOR_COMMON | {"timeconst", "area", "diameter", "bias"},
    "muscle": None,
    "adhesion": _ACTUATOR_COMMON | {"gain"},
}
ACTUATOR_TAGS = frozenset(ACTUATOR_ATTRS)
SUPPORTED_ACTUATORS = frozenset({"motor", "position", "velocity", "general"})

GEOM_ATTRS = {
    "name", "class", "type", "contype", "conaffinity", "condim", "group", "priority", "size",
    "material", "friction", "mass", "density", "shellinertia", "solmix", "solref", "solimp",
    "margin", "gap", "fromto", "hfield", "mesh", "fitscale", "rgba", "fluidshape", "fluidcoef",
    "user",
} | _FRAME
JOINT_ATTRS = {
    "name", "class", "type", "group", "pos", "axis", "springdamper", "limited",
    "actuatorfrclimited", "solreflimit", "solimplimit", "solreffriction", "solimpfriction",
    "stiffness", "range", "actuatorfrcrange", "actuatorgravcomp", "margin", "ref", "springref",
    "armature", "damping", "frictionloss", "user",
}
MESH_ATTRS = {
    "name", "class", "content_type", "file", "vertex", "normal", "texcoord", "face", "refpos",
    "refquat", "scale", "smoothnormal", "maxhullvert", "inertia", "builtin", "params", "material",
}
PAIR_ATTRS = {"name", "class", "geom1", "geom2", "condim", "friction", "solref", "solreffriction",
              "solimp", "gap", "margin"}
SITE_ATTRS = {"name", "class", "type", "group", "size", "fromto", "material", "rgba", "user"} | _FRAME

_BODY_CHILDREN = {"body", "geom", "site", "camera", "light", "frame", "replicate", "composite",
                  "flexcomp", "plugin", "attach", "joint", "freejoint", "inertial", "include"}

# tag -> (attributes or None when not checked, allowed children or None when not walked)
ELEMENTS: dict[str, tuple[set | None, set | None]] = {
    "mujoco": ({"model"}, {"compiler", "option", "size", "visual", "statistic", "default", "custom",
                           "extension", "asset", "worldbody", "contact", "equality", "tendon",
                           "actuator", "sensor", "keyframe", "deformable", "include"}),
    "include": ({"file"}, set()),
    "compiler": ({"autolimits", "boundmass", "boundinertia", "settotalmass", "balanceinertia",
                  "strippath", "coordinate", "angle", "fitaabb", "eulerseq", "meshdir",
                  "texturedir", "assetdir", "discardvisual", "usethread", "fusestatic",
                  "inertiafromgeom", "inertiagrouprange", "saveinertial", "alignfree"},
                 {"lengthrange"}),
    "lengthrange": (None, set()),
    "option": ({"timestep", "apirate", "impratio", "tolerance", "ls_tolerance", "noslip_tolerance",
                "ccd_tolerance", "gravity", "wind", "magnetic", "density", "viscosity", "o_margin",
                "o_solref", "o_solimp", "o_friction", "integrator", "cone", "jacobian", "solver",
                "iterations", "ls_iterations", "noslip_iterations", "ccd_iterations",
                "sdf_iterations", "sdf_initpoints", "actuatorgroupdisable", "sleep_tolerance"},
               {"flag"}),
    "flag": ({"constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper",
              "passive", "gravity", "clampctrl", "warmstart", "filterparent", "actuation",
              "refsafe", "sensor", "midphase", "eulerdamp", "autoreset", "nativeccd", "island",
              "override", "energy", "fwdinv", "invdiscrete", "multiccd", "sleep"}, set()),
    "default": ({"class"}, {"default", "mesh", "material", "joint", "geom", "site", "camera",
                            "light", "pair", "equality", "tendon"} | set(ACTUATOR_TAGS)),
    "asset": (set(), {"mesh", "texture", "material", "hfield", "skin", "model", "include"}),
    "mesh": (MESH_ATTRS, {"plugin"}),
    "hfield": ({"name", "content_type", "file", "nrow", "ncol", "size", "elevation"}, set()),
    "texture": (None, set()),
    "material": (None, None),
    "worldbody": (set(), _BODY_CHILDREN - {"joint", "freejoint", "inertial"}),
    "body": ({"name", "childclass", "mocap", "gravcomp", "user", "sleep"} | _FRAME, _BODY_CHILDREN),
    "frame": ({"name", "childclass"} | _FRAME, _BODY_CHILDREN - {"freejoint", "inertial"}),
    "inertial": ({"mass", "diaginertia", "fullinertia"} | _FRAME, set()),
    "joint": (JOINT_ATTRS, set()),
    "freejoint": ({"name", "group", "align"}, set()),
    "geom": (GEOM_ATTRS, {"plugin"}),
    "site": (SITE_ATTRS, set()),
    "camera": (None, None),
    "light": (None, None),
    "contact": (set(), {"pair", "exclude", "include"}),
    "pair": (PAIR_ATTRS, set()),
    "exclude": ({"name", "body1", "body2"}, set()),
    "actuator": (set(), set(ACTUATOR_TAGS) | {"plugin", "include"}),
    "keyframe": (set(), {"key", "include"}),
    "key": ({"name", "time", "qpos", "qvel", "act", "mpos", "mquat", "ctrl"}, set()),
    **{tag: (attrs, set()) for tag, attrs in ACTUATOR_ATTRS.items()},
}

# Sections and elements scenec cannot represent: an error (E708) naming them, with a fix.
UNSUPPORTED = {
    "tendon": "scenec has no tendons; remove the <tendon> section (the couplings it adds are lost)",
    "equality": "scenec has no equality constraints; remove the <equality> section, or model the "
                "coupling with a joint",
    "deformable": "scenec simulates rigid bodies only; remove the <deformable> section",
    "extension": "scenec runs no MuJoCo plugins; remove the <extension> section",
    "composite": "expand the composite into bodies, joints and geoms (MuJoCo can save the "
                 "expanded model with mj_saveLastXML)",
    "flexcomp": "scenec simulates rigid bodies only; remove the flexcomp",
    "replicate": "expand the replicate into copies (MuJoCo can save the expanded model with "
                 "mj_saveLastXML)",
    "plugin": "scenec runs no MuJoCo plugins; remove it",
    "attach": "attach the model by copying its bodies (MuJoCo can save the combined model with "
              "mj_saveLastXML)",
    "model": "inline the sub-model's bodies (MuJoCo can save the combined model with mj_saveLastXML)",
}
# Sections read by nobody: a warning (W700) that they were ignored.
IGNORED_SECTIONS = {
    "sensor": "scenec has no sensors; observations are written in the task section instead",
    "custom": "custom numeric/text data has no meaning to scenec",
}
# Sections with no physical meaning, skipped without a word: rendering, memory sizes, statistics.
COSMETIC_SECTIONS = frozenset({"visual", "size", "statistic"})
# Body children dropped with a note (W701): nothing in the physics depends on them.
DROPPED = frozenset({"site", "camera", "light"})

# Attributes MuJoCo uses in the physics that scenec does not have: a warning (W704) when given.
IGNORED_ATTRS = {
    "geom": {"priority", "solmix", "solimp", "margin", "gap", "shellinertia", "fluidshape",
             "fluidcoef"},
    "joint": {"springdamper", "actuatorfrclimited", "actuatorfrcrange", "actuatorgravcomp",
              "solimplimit", "solreffriction", "solimpfriction", "margin", "frictionloss"},
    "body": {"gravcomp"},
    "mesh": {"refpos", "refquat"},
    "pair": {"condim", "solref", "solreffriction", "solimp", "gap", "margin"},
    "compiler": {"boundmass", "boundinertia", "settotalmass", "balanceinertia", "inertiagrouprange",
                 "discardvisual", "alignfree"},
    "option": {"wind", "magnetic", "density", "viscosity", "o_margin", "o_solref", "o_solimp",
               "o_friction", "impratio"},
    "actuator": {"actlimited", "actrange", "cranklength", "actdim", "actearly", "nsample",
                 "interp", "delay", "lengthrange", "dampratio", "timeconst", "inheritrange"},
}
# MuJoCo's defaults of the ignored attributes: given at their default they change nothing, so no
# warning.
IGNORED_DEFAULTS = {
    "priority": "0", "solmix": "1", "margin": "0", "gap": "0", "shellinertia": "false",
    "fluidshape": "none", "springdamper": "0 0", "actuatorfrclimited": "auto",
    "actuatorgravcomp": "false", "frictionloss": "0", "gravcomp": "0", "boundmass": "0",
    "boundinertia": "0", "settotalmass": "-1", "balanceinertia": "false",
    "inertiagrouprange": "0 5", "discardvisual": "false", "alignfree": "false",
    "actlimited": "auto", "actearly": "false", "actdim": "-1", "nsample": "0", "delay": "0",
    "cranklength": "0", "inheritrange": "0", "lengthrange": "0 0",
}

# Flags whose MuJoCo default is "enable" and that the importer maps; any other flag changed from
# its default is a warning (W704).
FLAG_DEFAULTS = {
    "constraint": "enable", "equality": "enable", "frictionloss": "enable", "limit": "enable",
    "contact": "enable", "spring": "enable", "damper": "enable", "passive": "enable",
    "gravity": "enable", "clampctrl": "enable", "warmstart": "enable", "filterparent": "enable",
    "actuation": "enable", "refsafe": "enable", "sensor": "enable", "midphase": "enable",
    "eulerdamp": "enable", "autoreset": "enable", "nativeccd": "enable", "island": "enable",
    "override": "disable", "energy": "disable", "fwdinv": "disable", "invdiscrete": "disable",
    "multiccd": "disable", "sleep": "disable",
}

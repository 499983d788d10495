"""YAML node tree -> `Scene` message + source map, folding expressions and checking units.

Where it sits: schema/, second step of the YAML loader (after `yaml_tree.compose`). The mapping is
driven by the proto descriptors, so a field added to `scene.proto` is readable from YAML at once:
keys are field names, a oneof member is its key (`sphere: {radius: 0.1}`), enum values are
lowercase names, a scalar where a list is expected is a list of one, and every numeric field takes a
number or an expression (see `expr.py`) whose dimension must match the field's `(scenec.unit)`.
Reports format errors (E1xx) and leaves semantic checks to compiler/validate.py. No jax.
"""

from __future__ import annotations

import math

from google.protobuf.descriptor import FieldDescriptor as FD

from . import expr, names, scene_pb2, units
from .diagnostics import Diagnostic, Severity, Span
from .yaml_tree import Document, YMap, YScalar, YSeq, kind_of

_FLOATS = (FD.TYPE_DOUBLE, FD.TYPE_FLOAT)
_INT_RANGES = {
    FD.TYPE_INT32: (-2**31, 2**31 - 1), FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_INT64: (-2**63, 2**63 - 1), FD.TYPE_UINT64: (0, 2**64 - 1),
}

# Top-level keys read first: parameters are needed by every expression, joint kinds by the units
# of actuators and joint values. Everything else keeps document order.
_FIRST = {"parameters": 0, "joints": 1}


def real_oneof(field):
    """The oneof a field belongs to, ignoring the synthetic ones of proto3 `optional` fields."""
    oneof = field.containing_oneof
    if oneof is None or (len(oneof.fields) == 1 and oneof.name == "_" + field.name):
        return None
    return oneof


def _type_words(field) -> str:
    if field.type == FD.TYPE_MESSAGE:
        return f"a mapping ({field.message_type.name})"
    if field.type in _FLOATS:
        return "a number or an expression"
    if field.type in _INT_RANGES:
        return "an integer"
    if field.type == FD.TYPE_BOOL:
        return "true or false"
    if field.type == FD.TYPE_ENUM:
        return "a name, " + names.choices(v.name.lower() for v in field.enum_type.values)
    return "a string"


def _kind_word(kind: int | None) -> str:
    return scene_pb2.JointKind.Name(kind).lower() if kind is not None else ""


class Converter:
    """Builds one Scene from one document; collects diagnostics, spans and failed paths."""

    def __init__(self, doc: Document):
        self.doc = doc
        self.diagnostics: list[Diagnostic] = []
        self.spans: dict[tuple, Span] = {}
        self.failed: set[tuple] = set()
        self.params: dict[str, expr.Quantity] = {}
        self.params_failed: set[str] = set()
        self.params_used: set[str] = set()
        self.joint_kinds: dict[str, int] = {}

    # -- reporting -------------------------------------------------------------------------

    def error(self, code: str, message: str, span: Span, hint: str = ""):
        self.diagnostics.append(Diagnostic(code, message, span, hint))

    def expected(self, what: str, node, path: tuple, hint: str = ""):
        self.error("E102", f"expected {what}, got {kind_of(node)}", node.span, hint)
        self.failed.add(path)

    # -- structure ---------------------------------------------------------------------------

    def scene(self, root: YMap) -> scene_pb2.Scene:
        scene = scene_pb2.Scene()
        self.spans[()] = root.span
        items = sorted(root.items, key=lambda kv: _FIRST.get(_key_text(kv[0]) or "", 2))
        self.message_items(scene, items, (), None)
        for param in scene.parameters:
            name = param.name
            if name in self.params and name not in self.params_used:
                index = list(scene.parameters).index(param)
                self.diagnostics.append(Diagnostic(
                    "W101", f"parameter '{name}' is never used",
                    self.spans.get(("parameters", index, "name"), root.span),
                    "remove it, or use it in a field", Severity.WARNING))
        return scene

    def message(self, msg, node, path: tuple, kind: int | None):
        """Fill `msg` from a mapping node (null reads as an empty message)."""
        msg.SetInParent()
        if isinstance(node, YScalar) and node.value is None:
            return
        if not isinstance(node, YMap):
            self.expected(f"a mapping of {msg.DESCRIPTOR.name} fields", node, path)
            return
        self.message_items(msg, node.items, path, kind)

    def message_items(self, msg, items, path: tuple, kind: int | None):
        desc = msg.DESCRIPTOR
        kind = self.context_kind(desc, items, kind)
        chosen: dict[str, YScalar] = {}
        for key, value in items:
            name = _key_text(key)
            if name is None:
                if not _refused(key):
                    self.error("E102", f"expected a field name as key, got {kind_of(key)}", key.span)
                continue
            if desc is scene_pb2.Scene.DESCRIPTOR and name == "parameters":
                self.parameters(msg, value)
                continue
            field = desc.fields_by_name.get(name)
            if field is None:
                self.error("E101", f"unknown field '{name}' in {desc.name}", key.span,
                           _field_hint(desc, name))
                intended = names.closest(name, desc.fields_by_name)
                if intended is not None:  # checks of the field it was meant to be would only echo
                    self.failed.add(path + (intended,))
                continue
            oneof = real_oneof(field)
            if oneof is not None:
                first = chosen.get(oneof.name)
                if first is not None:
                    self.error("E103", f"'{name}' and '{first.text}' are both given, but a "
                               f"{desc.name} has only one {oneof.name}", key.span,
                               f"keep one of {', '.join(f.name for f in oneof.fields)}")
                    continue
                chosen[oneof.name] = key
            self.field(msg, field, value, path + (name,), kind)

    def context_kind(self, desc, items, inherited: int | None) -> int | None:
        """The joint kind that resolves "rad|m" units inside this message, if any."""
        values = {_key_text(k): v for k, v in items}
        if desc is scene_pb2.Joint.DESCRIPTOR:
            node = values.get("kind")
            if node is None:
                return scene_pb2.HINGE
            if isinstance(node, YScalar) and isinstance(node.value, str):
                found = scene_pb2.JointKind.DESCRIPTOR.values_by_name.get(node.value.upper())
                return found.number if found is not None else None
            return None
        if desc in (scene_pb2.Actuator.DESCRIPTOR, scene_pb2.JointValue.DESCRIPTOR):
            node = values.get("joint")
            if isinstance(node, YScalar) and isinstance(node.value, str):
                return self.joint_kinds.get(node.value)
            return None
        return inherited

    def field(self, msg, field, node, path: tuple, kind: int | None):
        self.spans[path] = node.span
        if _refused(node):
            self.failed.add(path)
            return
        if field.is_repeated:
            self.repeated(msg, field, node, path, kind)
        elif field.type == FD.TYPE_MESSAGE:
            self.message(getattr(msg, field.name), node, path, kind)
        else:
            value = self.scalar(field, node, path, kind, 0)
            if value is not None:
                setattr(msg, field.name, value)

    def repeated(self, msg, field, node, path: tuple, kind: int | None):
        container = getattr(msg, field.name)
        if isinstance(node, YScalar) and node.value is None:
            return
        if field.type == FD.TYPE_MESSAGE:
            if not isinstance(node, YSeq):
                self.expected(f"a list of {field.message_type.name} mappings", node, path)
                return
            for item in node.items:
                if _refused(item):
                    continue
                if isinstance(item, YMap):
                    index = len(container)
                    self.spans[path + (index,)] = item.span
                    sub = container.add()
                    self.message_items(sub, item.items, path + (index,), kind)
                    if field.message_type is scene_pb2.Joint.DESCRIPTOR and sub.name:
                        self.joint_kinds.setdefault(sub.name, sub.kind)
                else:
                    self.error("E102", f"expected a {field.message_type.name} mapping, "
                               f"got {kind_of(item)}", item.span)
            return
        items = node.items if isinstance(node, YSeq) else [node]
        placeholder = _placeholder(field)
        for item in items:
            index = len(container)
            self.spans[path + (index,)] = item.span
            value = self.scalar(field, item, path + (index,), kind, index)
            if value is None:
                self.failed.add(path + (index,))
                value = placeholder
            container.append(value)

    # -- scalars -----------------------------------------------------------------------------

    def scalar(self, field, node, path: tuple, kind: int | None, index: int):
        """The proto value of a scalar node, or None (reported, and `path` marked failed)."""
        if _refused(node):
            self.failed.add(path)
            return None
        if not isinstance(node, YScalar):
            self.expected(_type_words(field), node, path)
            return None
        if field.type in _FLOATS or field.type in _INT_RANGES:
            value = self.number(field, node, kind, index)
        elif field.type == FD.TYPE_BOOL:
            value = node.value if isinstance(node.value, bool) else None
            if value is None:
                self.expected("true or false", node, path)
        elif field.type == FD.TYPE_STRING:
            value = node.value if isinstance(node.value, str) else None
            if value is None:
                hint = f'quote it: "{node.text}"' if node.text else ""
                self.expected("a string", node, path, hint)
        elif field.type == FD.TYPE_ENUM:
            value = self.enum(field, node, path)
        else:  # pragma: no cover - scene.proto has no bytes fields
            value = None
            self.expected(_type_words(field), node, path)
        if value is None:
            self.failed.add(path)
        return value

    def enum(self, field, node: YScalar, path: tuple):
        enum = field.enum_type
        options = [v.name.lower() for v in enum.values]
        if not isinstance(node.value, str):
            self.expected("a name, " + names.choices(options), node, path)
            return None
        found = enum.values_by_name.get(node.value.strip().upper())
        if found is None:
            what = f"{field.containing_type.name.lower()} {field.name}"
            hint = names.did_you_mean(node.value.lower(), options)
            hint = (hint + " " if hint else "") + names.choices(options)
            self.error("E104", f"unknown {what} '{node.value}'", node.span, hint)
            return None
        return found.number

    def number(self, field, node: YScalar, kind: int | None, index: int):
        value = node.value
        integer = field.type in _INT_RANGES
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.error("E102", f"expected {_type_words(field)}, got {kind_of(node)}", node.span)
            return None
        if isinstance(value, str):
            quantity = self.expression(node, expr.Names(self.params, frozenset(),
                                                        frozenset(self.params_failed),
                                                        self.params_used))
            if quantity is None:
                return None
        elif integer and isinstance(value, int):
            return self.check_int(field, node, value)
        else:
            quantity = expr.plain(_to_float(value))
        if not self.check_dims(field, node, quantity, kind, index):
            return None
        if integer:
            if not math.isfinite(quantity.value) or quantity.value != int(quantity.value):
                self.error("E110", f"'{field.name}' must be a whole number, got {quantity.value:g}",
                           node.span)
                return None
            return self.check_int(field, node, int(quantity.value))
        return quantity.value

    def check_int(self, field, node, value: int):
        low, high = _INT_RANGES[field.type]
        if not low <= value <= high:
            self.error("E110", f"'{field.name}' must be an integer in [{low}, {high}], got {value}",
                       node.span)
            return None
        return value

    def check_dims(self, field, node: YScalar, q: expr.Quantity, kind: int | None, index: int) -> bool:
        accepted = units.field_dims(field, kind, index)
        if accepted is None or q.bare or q.dims in accepted:
            return True
        wanted = " or ".join(units.describe_dims(d) for d in accepted)
        owner = field.containing_type.name
        context = ""
        if "|" in units.field_unit_spec(field) and kind is not None:
            context = f" of a {_kind_word(kind)} joint"
        span = self.doc.inner_span(node, *q.origin) if q.origin else node.span
        first = units.format_dims(accepted[0]) or "1"
        self.error("E108", f"'{field.name}'{context} expects {wanted}, but this is "
                   f"{units.describe_dims(q.dims)}", span,
                   f"{owner}.{field.name} is in {first}: write a bare number, or a value with a "
                   f"unit of that dimension")
        return False

    def expression(self, node: YScalar, scope: expr.Names) -> expr.Quantity | None:
        try:
            return expr.evaluate(node.value, scope)
        except expr.ExprError as e:
            self.error(e.code, e.message, self.doc.inner_span(node, e.start, e.end), e.hint)
        except expr.Unresolved:
            pass  # it names a parameter whose definition failed; that is reported already
        return None

    # -- parameters ----------------------------------------------------------------------------

    def parameters(self, scene, node):
        path = ("parameters",)
        self.spans[path] = node.span
        entries = self.parameter_entries(node)
        declared = [name for name, *_ in entries]
        for index, (name, name_node, value_node, doc_node, entry_node) in enumerate(entries):
            param = scene.parameters.add()
            here = path + (index,)
            self.spans[here] = entry_node.span
            if name_node is not None:
                self.spans[here + ("name",)] = name_node.span
            if name is not None:
                param.name = name
            if doc_node is not None:
                self.spans[here + ("doc",)] = doc_node.span
                if isinstance(doc_node, YScalar) and isinstance(doc_node.value, str):
                    param.doc = doc_node.value
                else:
                    self.expected("a string", doc_node, here + ("doc",))
            if name is None:
                continue
            if not names.IDENTIFIER.fullmatch(name) or name in expr.RESERVED:
                what = "a unit" if name in units.UNITS else "a function" if name in expr.FUNCTIONS \
                    else "a constant" if name in expr.CONSTANTS else None
                message = (f"parameter name '{name}' is {what} name" if what else
                           f"parameter name '{name}' is not a valid name")
                self.error("E113", message, name_node.span,
                           "choose another name" if what else
                           "use letters, digits and '_', not starting with a digit")
                self.params_failed.add(name)
                continue
            if name in self.params or name in self.params_failed:
                continue  # a duplicate: compiler/validate.py reports it (E201)
            if value_node is None:
                self.error("E119", f"parameter '{name}' has no value", entry_node.span)
                self.params_failed.add(name)
                continue
            self.spans[here + ("value",)] = value_node.span
            quantity = self.parameter_value(value_node, declared[index + 1:])
            if quantity is None:
                self.params_failed.add(name)
                self.failed.add(here + ("value",))
                continue
            self.params[name] = quantity
            param.value = quantity.value
            param.unit = units.format_dims(quantity.dims)
            if isinstance(value_node.value, str):
                param.expression = value_node.value

    def parameter_value(self, node, later: list) -> expr.Quantity | None:
        if _refused(node):
            return None
        if not isinstance(node, YScalar) or node.value is None or isinstance(node.value, bool):
            self.error("E102", f"expected a number or an expression, got {kind_of(node)}", node.span)
            return None
        if isinstance(node.value, str):
            scope = expr.Names(self.params, frozenset(n for n in later if n not in self.params),
                               frozenset(self.params_failed), self.params_used)
            return self.expression(node, scope)
        return expr.plain(_to_float(node.value))

    def parameter_entries(self, node):
        """[(name, name node, value node, doc node, entry node)] from the mapping or list form."""
        entries = []
        if isinstance(node, YScalar) and node.value is None:
            return entries
        if isinstance(node, YMap):
            for key, value in node.items:
                name = _key_text(key)
                if name is None:
                    self.error("E102", f"expected a parameter name as key, got {kind_of(key)}", key.span)
                    continue
                if isinstance(value, YMap):
                    fields = self.parameter_fields(value, ("value", "doc"))
                    entries.append((name, key, fields.get("value"), fields.get("doc"), key))
                else:
                    entries.append((name, key, value, None, key))
            return entries
        if isinstance(node, YSeq):
            for item in node.items:
                if not isinstance(item, YMap):
                    self.error("E102", f"expected a parameter mapping {{name, value, doc}}, got "
                               f"{kind_of(item)}", item.span)
                    continue
                fields = self.parameter_fields(item, ("name", "value", "doc"))
                name_node = fields.get("name")
                name = None
                if name_node is None:
                    pass  # compiler/validate.py reports the missing name (E119)
                elif isinstance(name_node, YScalar) and isinstance(name_node.value, str):
                    name = name_node.value
                else:
                    self.error("E102", f"expected a string, got {kind_of(name_node)}", name_node.span)
                entries.append((name, name_node, fields.get("value"), fields.get("doc"), item))
            return entries
        self.error("E102", "expected a mapping of parameters (name: value) or a list of "
                   f"{{name, value, doc}}, got {kind_of(node)}", node.span)
        return entries

    def parameter_fields(self, node: YMap, allowed: tuple) -> dict:
        fields = {}
        for key, value in node.items:
            name = _key_text(key)
            if name in allowed:
                fields[name] = value
            elif name is None:
                self.error("E102", f"expected a field name as key, got {kind_of(key)}", key.span)
            else:
                hint = names.did_you_mean(name, allowed)
                if name in ("expression", "unit"):
                    hint = f"'{name}' is filled in by the loader; write the expression as the value"
                self.error("E101", f"unknown field '{name}' in a parameter", key.span,
                           hint or names.choices(allowed))
        return fields


def _refused(node) -> bool:
    """An alias the reader refused (reported there); reading it as null would only echo."""
    return isinstance(node, YScalar) and node.style == "*"


def _key_text(key) -> str | None:
    if isinstance(key, YScalar) and (key.value is not None or key.style not in (None, "*")):
        return key.text
    return None


def _to_float(value) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer too large for a double: infinite, reported as such later
        return math.inf if value > 0 else -math.inf


def _placeholder(field):
    return 0.0 if field.type in _FLOATS else 0 if field.type != FD.TYPE_STRING else ""


def _field_hint(desc, name: str) -> str:
    """A did-you-mean for an unknown key, looking into oneof members too (`radius` -> sphere)."""
    hint = names.did_you_mean(name, desc.fields_by_name)
    if hint:
        return hint
    for oneof in desc.oneofs:
        if real_oneof(oneof.fields[0]) is None:
            continue
        owners = [f.name for f in oneof.fields
                  if f.message_type is not None and name in f.message_type.fields_by_name]
        if owners:
            return f"'{name}' belongs inside the {oneof.name}, e.g. `{owners[0]}: {{{name}: ...}}`"
    return names.choices(desc.fields_by_name)

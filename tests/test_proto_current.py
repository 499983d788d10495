"""The committed schema/scene_pb2.py is current with schema/scene.proto.

Compiles scene.proto with grpc_tools' protoc into a descriptor set and compares its
FileDescriptorProto with the one embedded in the committed module, so the check does not depend on
the protoc version that wrote the Python code. Regenerate with `python tools/gen_proto.py`.
"""

from __future__ import annotations

import pathlib

import pytest
from google.protobuf import descriptor_pb2

from scenec.schema import scene_pb2

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _gen_proto():
    return load_tool("gen_proto")


def _normalized(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """Drop what protoc writes into descriptor sets but not into generated code (json_name)."""
    file = descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString())

    def strip(messages):
        for message in messages:
            for field in list(message.field) + list(message.extension):
                field.ClearField("json_name")
            strip(message.nested_type)

    strip(file.message_type)
    for field in file.extension:
        field.ClearField("json_name")
    return file


def test_scene_pb2_is_current(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is not installed; cannot recompile scene.proto")
    gen = _gen_proto()
    out = tmp_path / "scene.desc"
    status = gen.run_protoc(f"--descriptor_set_out={out}", str(ROOT / "schema" / "scene.proto"))
    assert status == 0, "protoc failed on scene.proto"
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    (compiled,) = [f for f in fresh.file if f.name == "scene.proto"]
    committed = descriptor_pb2.FileDescriptorProto.FromString(scene_pb2.DESCRIPTOR.serialized_pb)
    assert _normalized(compiled) == _normalized(committed), (
        "schema/scene_pb2.py is stale: run `python tools/gen_proto.py` and commit the result")

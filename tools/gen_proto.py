"""Regenerate schema/scene_pb2.py (and its .pyi stub) from schema/scene.proto.

Run after editing scene.proto:  python tools/gen_proto.py
tests/test_proto_current.py fails while the committed module is stale. Needs grpcio-tools (the
`test` extra), which bundles protoc and the well-known .proto files (descriptor.proto).
"""

from __future__ import annotations

import pathlib
import sys

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "schema"


def protoc_include() -> str:
    """The folder of grpc_tools' bundled well-known protos (google/protobuf/descriptor.proto)."""
    import grpc_tools
    return str(pathlib.Path(grpc_tools.__file__).parent / "_proto")


def run_protoc(*args: str) -> int:
    from grpc_tools import protoc
    return protoc.main(["protoc", f"-I{SCHEMA}", f"-I{protoc_include()}", *args])


def main() -> int:
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        print("gen_proto: grpcio-tools is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    status = run_protoc(f"--python_out={SCHEMA}", f"--pyi_out={SCHEMA}", str(SCHEMA / "scene.proto"))
    if status != 0:
        print(f"gen_proto: protoc failed with status {status}", file=sys.stderr)
        return 1
    print(f"regenerated {SCHEMA / 'scene_pb2.py'} and scene_pb2.pyi")
    return 0


if __name__ == "__main__":
    sys.exit(main())

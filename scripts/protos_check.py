"""Fail when the committed stubs in lastv2x/v1 are not what protos/ generates (make protos-check).

The stubs are generated again, by the grpcio-tools the lock pins, into a temporary folder and
compared file by file. The lines that only stamp the generator's version (the gRPC plugin's
``GRPC_GENERATED_VERSION``, protoc's ``Protobuf Python Version`` comment and the runtime-version
check's numbers) are left out of the comparison: a patch release of the tools changes them and
nothing else, and the runtime accepts stubs from any version up to its own. So this fails only
when a ``.proto`` changed without ``make protos``, and says which ``.proto`` to regenerate from.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
STUB_PACKAGE = Path("lastv2x") / "v1"
_STUB_SUFFIXES = ("_pb2_grpc.py", "_pb2.pyi", "_pb2.py")

_VERSION_STAMPS = (
    re.compile(r"^GRPC_GENERATED_VERSION = '[^']*'$", re.M),
    re.compile(r"^# Protobuf Python Version: .*$", re.M),
    re.compile(r"(ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,)\s*\d+,\s*\d+,\s*\d+,\s*'[^']*',"),
)


def without_version_stamps(text: str) -> str:
    for stamp in _VERSION_STAMPS:
        text = stamp.sub(lambda m: m.group(1) if m.groups() else "", text)
    return text


def proto_of(stub_name: str) -> str:
    """protos/lastv2x/v1/simulator.proto for simulator_pb2_grpc.py (and the other suffixes)."""
    for suffix in _STUB_SUFFIXES:
        if stub_name.endswith(suffix):
            return str(Path("protos") / STUB_PACKAGE / (stub_name[: -len(suffix)] + ".proto"))
    return "protos/"


def drift(generated_dir: Path, committed_dir: Path) -> list[str]:
    """One line per stub that differs (beyond version stamps), is missing, or has no .proto any more."""
    problems = []
    generated = {p.name for p in generated_dir.iterdir() if p.is_file()}
    committed = {p.name for p in committed_dir.iterdir() if p.is_file() and p.name.endswith(_STUB_SUFFIXES)}
    for name in sorted(generated | committed):
        if name not in committed:
            problems.append(f"stub missing: {STUB_PACKAGE / name} (run make protos: new {proto_of(name)})")
        elif name not in generated:
            problems.append(f"stale stub: {STUB_PACKAGE / name} has no {proto_of(name)} (delete it, then make protos)")
        elif without_version_stamps((generated_dir / name).read_text()) != without_version_stamps(
            (committed_dir / name).read_text()
        ):
            problems.append(f"stub drift: {STUB_PACKAGE / name} differs from {proto_of(name)} (run make protos)")
    return problems


def main() -> int:
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / STUB_PACKAGE).glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTO_ROOT), f"--python_out={tmp}",
             f"--pyi_out={tmp}", f"--grpc_python_out={tmp}", *protos],
            cwd=PROTO_ROOT, capture_output=True, text=True,
        )
        if result.returncode != 0:
            print(f"protoc failed on protos/:\n{result.stderr.strip()}", file=sys.stderr)
            return 1
        problems = drift(Path(tmp) / STUB_PACKAGE, ROOT / STUB_PACKAGE)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"stubs match protos ({len(protos)} .proto files)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

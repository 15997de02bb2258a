"""The ASAM XML schemas (OpenSCENARIO 1.0 ... 1.3.1, OpenDRIVE 1.7) and validation against them.

The schemas are the ones the ``scenariogeneration`` wheel installs (top-level ``schemas/`` of
its distribution, found through its file list, never downloaded). Validation uses lxml's
XML Schema engine; :func:`validate_xosc` picks the schema of the OpenSCENARIO minor version
the file declares in ``FileHeader/@revMinor``.
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FailedPrecondition

#: OpenSCENARIO minor version -> schema file name in the wheel
XOSC_SCHEMAS = {0: "OpenSCENARIO_1_0.xsd", 1: "OpenSCENARIO_1_1.xsd", 2: "OpenSCENARIO_1_2.xsd",
                3: "OpenSCENARIO_1_3_1.xsd"}
XODR_SCHEMA = "opendrive_17_core.xsd"  # includes the lane, road, junction, object, signal, railroad parts


def schema_dir() -> Path:
    """The folder holding the ASAM schemas installed with ``scenariogeneration``."""
    try:
        files = metadata.distribution("scenariogeneration").files or []
    except metadata.PackageNotFoundError:
        raise FailedPrecondition("the scenariogeneration package is not installed (it ships the ASAM schemas)",
                                 "pip install 'lastv2x[export]'") from None
    for f in files:
        if f.name == XODR_SCHEMA:
            return Path(str(f.locate())).parent
    raise FailedPrecondition("the installed scenariogeneration wheel holds no ASAM schemas",
                             "install scenariogeneration>=0.16 (its wheel ships schemas/*.xsd)")


@functools.lru_cache(maxsize=8)
def _schema(name: str) -> Any:
    from lxml import etree

    path = schema_dir() / name
    return etree.XMLSchema(etree.parse(str(path)))


def _validate(xml: bytes, schema_name: str) -> list[str]:
    from lxml import etree

    schema = _schema(schema_name)
    doc = etree.fromstring(xml)
    if schema.validate(doc):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]


def xosc_minor_version(xml: bytes) -> int:
    from lxml import etree

    header = etree.fromstring(xml).find("FileHeader")
    if header is None:
        raise ValueError("no FileHeader element")
    return int(header.get("revMinor", "-1"))


def validate_xosc(xml: bytes) -> tuple[str, list[str]]:
    """(schema file used, errors) for an OpenSCENARIO document; no errors = valid."""
    minor = xosc_minor_version(xml)
    name = XOSC_SCHEMAS.get(minor)
    if name is None:
        return "", [f"OpenSCENARIO 1.{minor} has no schema here (known: 1.0 .. 1.3)"]
    return name, _validate(xml, name)


def validate_xodr(xml: bytes) -> list[str]:
    """Errors of an OpenDRIVE document against the OpenDRIVE 1.7 schema; none = valid."""
    return _validate(xml, XODR_SCHEMA)


__all__ = ["XODR_SCHEMA", "XOSC_SCHEMAS", "schema_dir", "validate_xodr", "validate_xosc", "xosc_minor_version"]

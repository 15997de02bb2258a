"""Test helpers: tiny writers for Cyber records and protobuf MCAP files.

Writers here are test fixtures (they synthesize inputs in ``tmp_path``); the
real third-party recordings are read from ``shared_data``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from services.strap.readers.cyber_record import _PB

_T = descriptor_pb2.FieldDescriptorProto


def apollo_like_file() -> descriptor_pb2.FileDescriptorProto:
    """A minimal stand-in for Apollo's perception/traffic-light protos (names as in
    Apollo, so the Apollo channel map applies; only the fields the map reads)."""
    f = descriptor_pb2.FileDescriptorProto(name="fake/apollo_perception.proto",
                                           package="apollo.perception", syntax="proto2")
    obst = f.message_type.add(name="PerceptionObstacle")
    st = obst.enum_type.add(name="SubType")
    for i, n in enumerate(["ST_UNKNOWN", "ST_UNKNOWN_MOVABLE", "ST_UNKNOWN_UNMOVABLE", "ST_CAR", "ST_VAN",
                           "ST_TRUCK", "ST_BUS", "ST_CYCLIST", "ST_MOTORCYCLIST", "ST_TRICYCLIST",
                           "ST_PEDESTRIAN", "ST_TRAFFICCONE"]):
        st.value.add(name=n, number=i)
    obst.field.add(name="id", number=1, type=_T.TYPE_INT32, label=_T.LABEL_OPTIONAL)
    obst.field.add(name="sub_type", number=19, type=_T.TYPE_ENUM, label=_T.LABEL_OPTIONAL,
                   type_name=".apollo.perception.PerceptionObstacle.SubType")
    obsts = f.message_type.add(name="PerceptionObstacles")
    obsts.field.add(name="perception_obstacle", number=1, type=_T.TYPE_MESSAGE, label=_T.LABEL_REPEATED,
                    type_name=".apollo.perception.PerceptionObstacle")
    tl = f.message_type.add(name="TrafficLight")
    color = tl.enum_type.add(name="Color")
    for i, n in enumerate(["UNKNOWN", "RED", "YELLOW", "GREEN", "BLACK"]):
        color.value.add(name=n, number=i)
    tl.field.add(name="color", number=1, type=_T.TYPE_ENUM, label=_T.LABEL_OPTIONAL,
                 type_name=".apollo.perception.TrafficLight.Color")
    tld = f.message_type.add(name="TrafficLightDetection")
    tld.field.add(name="traffic_light", number=2, type=_T.TYPE_MESSAGE, label=_T.LABEL_REPEATED,
                  type_name=".apollo.perception.TrafficLight")
    return f


def message_classes(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, type]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{fdp.package}.{m.name}"))
            for m in fdp.message_type}


def _section(kind: int, body: bytes) -> bytes:
    return struct.pack("<i4xq", kind, len(body)) + body


def write_cyber_record(
    path: Path,
    channels: dict[str, tuple[str, descriptor_pb2.FileDescriptorProto]],
    chunks: Sequence[Iterable[tuple[str, int, bytes]]],
    *,
    compress: int = 0,
    with_index: bool = True,
) -> dict[str, int]:
    """Write a Cyber v1.0 record; returns byte offsets of interesting sections."""
    offsets: dict[str, int] = {}
    body = bytearray()
    counts = dict.fromkeys(channels, 0)
    for name, (type_name, fdp) in channels.items():
        desc = _PB["ProtoDesc"](desc=fdp.SerializeToString())
        ch = _PB["Channel"](name=name, message_type=type_name, proto_desc=desc.SerializeToString())
        offsets.setdefault("first_channel", 16 + 2048 + len(body))
        body += _section(4, ch.SerializeToString())
    all_times = []
    for k, chunk in enumerate(chunks):
        msgs = list(chunk)
        times = [t for _, t, _ in msgs]
        all_times += times
        for c, _, _ in msgs:
            counts[c] += 1
        hdr = _PB["ChunkHeader"](begin_time=min(times), end_time=max(times), message_number=len(msgs))
        offsets[f"chunk_header_{k}"] = 16 + 2048 + len(body)
        body += _section(1, hdr.SerializeToString())
        cb = _PB["ChunkBody"]()
        for c, t, data in msgs:
            cb.messages.add(channel_name=c, time=t, content=data)
        offsets[f"chunk_body_{k}"] = 16 + 2048 + len(body)
        body += _section(2, cb.SerializeToString())
    index_pos = 16 + 2048 + len(body)
    if with_index:
        idx = _PB["Index"]()
        for name, (type_name, _) in channels.items():
            e = idx.indexes.add(type=4, position=0)
            e.channel_cache.name = name
            e.channel_cache.message_type = type_name
            e.channel_cache.message_number = counts[name]
        offsets["index"] = index_pos
        body += _section(3, idx.SerializeToString())
    header = _PB["Header"](major_version=1, minor_version=0, compress=compress,
                           index_position=index_pos if with_index else 0,
                           chunk_number=len(chunks), channel_number=len(channels),
                           begin_time=min(all_times, default=0), end_time=max(all_times, default=0),
                           message_number=len(all_times), is_complete=True)
    hb = header.SerializeToString()
    data = struct.pack("<i4xq", 0, len(hb)) + hb + b"\0" * (2048 - len(hb)) + bytes(body)
    path.write_bytes(data)
    return offsets

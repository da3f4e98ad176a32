"""Read obbmeta's rotated boxes from the Redis stream that nvmsgbroker's Redis adaptor writes, one frame per line.

NVIDIA's Redis adaptor (libnvds_redis_proto.so) appends every payload to the stream named by nvmsgbroker's
``topic`` with ``XADD <topic> * <payloadkey> <payload>`` (``payloadkey`` from its config, default ``metadata``), or,
with ``DEEPSTREAM_ENABLE_SENSOR_ID_EXTRACTION=1``, as the fields ``key``, ``value``, ``headers``. This script reads
the stream with XREAD (no consumer group: it takes nothing away from other readers), turns each payload into frames
with :class:`obbmeta.publish.messages.FrameCollector` and prints them as JSON lines::

    python examples/consume_redis.py --url redis://127.0.0.1:6379/0 --stream obbmeta --from-start --idle 5

Needs the ``redis`` package (``pip install redis``); no DeepStream, no GPU.
"""
from __future__ import annotations

import argparse
import json
import sys

from obbmeta.publish import messages

PAYLOAD_FIELDS = (b"metadata", b"value")  # the adaptor's default payloadkey, and its DeepStream-format field


def payload_of(fields: dict, field: bytes | None) -> bytes | None:
    """The payload of one stream entry: ``field`` when given, else the adaptor's ``metadata`` or ``value``."""
    for name in (field,) if field else PAYLOAD_FIELDS:
        if name in fields:
            return fields[name]
    return None


def consume(client, stream: str, *, field: str | None = None, from_start: bool = False, count: int | None = None,
            idle_s: float = 5.0, out=sys.stdout, err=sys.stderr) -> int:
    """Print the frames of ``stream`` until ``count`` frames were printed or nothing arrived for ``idle_s``
    seconds; returns the number of frames printed. An entry that holds no obbmeta message, or a malformed or hostile
    one (every such payload is a :class:`~obbmeta.publish.messages.MessageError`), is reported on ``err`` and
    skipped."""
    collector = messages.FrameCollector()
    last = "0-0" if from_start else "$"
    key = field.encode() if field else None
    printed = 0

    def emit(frames):
        nonlocal printed
        for frame in frames:
            out.write(json.dumps(frame.to_dict(), ensure_ascii=False) + "\n")
            printed += 1
        out.flush()

    while count is None or printed < count:
        reply = client.xread({stream: last}, count=100, block=max(1, int(idle_s * 1000)))
        if not reply:
            break  # idle: nothing new for idle_s
        for _name, entries in reply:
            for entry_id, fields in entries:
                last = entry_id
                payload = payload_of(fields, key)
                if payload is None:
                    err.write(f"entry {entry_id!r}: no payload field ({field or 'metadata / value'})\n")
                    continue
                try:
                    frames = collector.add(payload)
                except messages.MessageError as exc:  # not obbmeta's, or malformed: report it, go on with the next
                    err.write(f"entry {entry_id!r}: {exc}\n")
                    continue
                emit(frames)
                if count is not None and printed >= count:
                    return printed
    emit(collector.flush())
    return printed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/0", help="Redis server (redis://host:port/db)")
    ap.add_argument("--stream", required=True, help="the stream: nvmsgbroker's topic")
    ap.add_argument("--field", help="the payload field (the adaptor's payloadkey; default: metadata or value)")
    ap.add_argument("--from-start", action="store_true", help="read the stream from its first entry, not new ones")
    ap.add_argument("--count", type=int, help="stop after this many frames")
    ap.add_argument("--idle", type=float, default=5.0, help="stop after this many seconds without a new entry")
    args = ap.parse_args(argv)
    try:
        import redis
    except ImportError:
        print("consume_redis.py needs the redis client: pip install redis", file=sys.stderr)
        return 2
    client = redis.Redis.from_url(args.url)
    try:
        consume(client, args.stream, field=args.field, from_start=args.from_start, count=args.count,
                idle_s=args.idle)
    except redis.exceptions.ConnectionError as exc:
        print(f"consume_redis.py: cannot read {args.url}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

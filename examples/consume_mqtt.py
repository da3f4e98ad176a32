"""Read obbmeta's rotated boxes from the MQTT topic nvmsgbroker's MQTT adaptor publishes to, one frame per line.

NVIDIA's MQTT adaptor (libnvds_mqtt_proto.so) publishes every nvmsgconv payload as one MQTT message on
nvmsgbroker's ``topic``. This script subscribes to it, turns each payload into frames with
:class:`obbmeta.publish.messages.FrameCollector` and prints them as JSON lines::

    python examples/consume_mqtt.py --host 127.0.0.1 --port 1883 --topic obbmeta --count 100

Needs paho-mqtt 2.x (``pip install paho-mqtt``); no DeepStream, no GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading

from obbmeta.publish import messages


class Printer:
    """Payloads in, frames out as JSON lines; counts what it printed (called from paho's network thread)."""

    def __init__(self, out=sys.stdout, err=sys.stderr, count: int | None = None):
        self.collector = messages.FrameCollector()
        self.out, self.err, self.count = out, err, count
        self.printed = 0
        self.done = threading.Event()

    def payload(self, topic: str, payload: bytes) -> None:
        try:
            frames = self.collector.add(payload)
        except messages.MessageError as exc:
            self.err.write(f"message on {topic}: {exc}\n")
            return
        self.emit(frames)

    def emit(self, frames) -> None:
        for frame in frames:
            self.out.write(json.dumps(frame.to_dict(), ensure_ascii=False) + "\n")
            self.printed += 1
        self.out.flush()
        if self.count is not None and self.printed >= self.count:
            self.done.set()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=1883)
    ap.add_argument("--topic", required=True, help="nvmsgbroker's topic")
    ap.add_argument("--count", type=int, help="stop after this many frames")
    ap.add_argument("--timeout", type=float, help="stop after this many seconds")
    args = ap.parse_args(argv)
    try:
        import paho.mqtt.client as mqtt
    except ImportError:
        print("consume_mqtt.py needs paho-mqtt 2.x: pip install paho-mqtt", file=sys.stderr)
        return 2
    printer = Printer(count=args.count)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.on_connect = lambda c, userdata, flags, reason, props: c.subscribe(args.topic)
    client.on_message = lambda c, userdata, msg: printer.payload(msg.topic, msg.payload)
    try:
        client.connect(args.host, args.port)
    except OSError as exc:
        print(f"consume_mqtt.py: cannot connect to {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    client.loop_start()
    try:
        printer.done.wait(args.timeout)
    except KeyboardInterrupt:
        pass
    finally:
        client.loop_stop()
        client.disconnect()
    printer.emit(printer.collector.flush())
    return 0


if __name__ == "__main__":
    sys.exit(main())

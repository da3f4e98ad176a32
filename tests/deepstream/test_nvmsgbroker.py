"""NVIDIA's Redis protocol adaptor (the library nvmsgbroker loads) publishes to a real redis-server started by the
test on 127.0.0.1; obbmeta.publish.messages reads the stream back: through the adaptor's C API (nvds_msgapi_*) and
through the nvmsgconv ! nvmsgbroker elements (DeepStream machine with the adaptor; skipped elsewhere)."""
from __future__ import annotations

import ctypes
import json
from ctypes import c_char_p, c_int, c_size_t, c_void_p

import numpy as np
import pytest
import readback

from obbmeta.publish import messages as consumer

from . import brokers, install

CONNECT_CB = ctypes.CFUNCTYPE(None, c_void_p, c_int)  # nvds_msgapi_connect_cb_t (nvds_msgapi.h)


@pytest.fixture
def redis_server():
    server = brokers.start_redis()
    yield server
    server.close()


@pytest.fixture
def adaptor():
    lib = ctypes.CDLL(str(install.library("libnvds_redis_proto.so")))
    lib.nvds_msgapi_connect.argtypes, lib.nvds_msgapi_connect.restype = [c_char_p, CONNECT_CB, c_char_p], c_void_p
    lib.nvds_msgapi_send.argtypes, lib.nvds_msgapi_send.restype = [c_void_p, c_char_p, c_char_p, c_size_t], c_int
    lib.nvds_msgapi_disconnect.argtypes, lib.nvds_msgapi_disconnect.restype = [c_void_p], c_int
    return lib


def test_the_redis_adaptor_writes_obbmetas_payload_byte_for_byte_and_the_consumer_reads_it(
        adaptor, redis_server, make_batch, tmp_path):
    import redis

    from obbmeta import nvds
    from obbmeta.nvds import messages

    batch = make_batch(width=640, height=480)
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=np.array([[100, 100, 40, 20, 0.5]], np.float32), labels=np.array([0]),
                     class_names=["ship"])
    text = messages.attach_obb_message(batch, frame)
    payload = json.dumps({"version": "4.0", "id": "0", "customMessage": [text]}).encode()
    config = tmp_path / "cfg_redis.txt"
    config.write_text("[message-broker]\npayloadkey=metadata\n")
    events = []
    callback = CONNECT_CB(lambda handle, event: events.append(event))
    handle = adaptor.nvds_msgapi_connect(f"127.0.0.1;{redis_server.port}".encode(), callback, str(config).encode())
    assert handle, "nvds_msgapi_connect returned NULL"
    try:
        assert adaptor.nvds_msgapi_send(handle, b"obbmeta", payload, len(payload)) == 0  # NVDS_MSGAPI_OK
    finally:
        adaptor.nvds_msgapi_disconnect(handle)
    ((_, fields),) = redis.Redis.from_url(redis_server.url).xrange("obbmeta")
    assert fields == {b"metadata": payload}
    (record,) = consumer.parse_payload(fields[b"metadata"])
    assert record.labels == ["ship"] and np.float32(record.objects[0].xywhr[4]) == np.float32(0.5)


def test_nvmsgbroker_publishes_every_frames_rotated_boxes_to_redis(ds_gst, redis_server, tmp_path):
    import redis
    from pipelines import buffer_probe, run

    from obbmeta import nvds

    from .pipelines_ds import NAMES
    from .test_nvmsgconv import CONFIG

    install.require_element(ds_gst, "nvmsgconv", "libnvdsgst_msgconv.so")
    install.require_element(ds_gst, "nvmsgbroker", "libnvdsgst_msgbroker.so")
    proto = install.library("libnvds_redis_proto.so")
    msgconv_cfg, broker_cfg = tmp_path / "msgconv.txt", tmp_path / "cfg_redis.txt"
    msgconv_cfg.write_text(CONFIG)
    broker_cfg.write_text("[message-broker]\npayloadkey=metadata\n")
    p = ds_gst.parse_launch(
        "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=RGBA,width=160,height=120 "
        f"! obbinfer model=obb_toy_models:toy input-size=96 class-names={NAMES} ! obbmessage "
        f"! nvmsgconv config={msgconv_cfg} msg2p-newapi=1 payload-type=1 frame-interval=1 ! identity name=out "
        f"! nvmsgbroker proto-lib={proto} conn-str=127.0.0.1;{redis_server.port} config={broker_cfg} "
        "topic=obbmeta sync=false")
    sent = []
    errors = buffer_probe(p.get_by_name("out"), "sink", lambda buf: sent.extend(
        (f.frame_number, [(i.class_id, i.label, tuple(o.xywhr)) for i, o in readback.pairs(f)])
        for f in nvds.BatchMeta.from_gst_buffer(buf).frames))
    outcome = run(p, timeout_s=60)
    assert outcome.eos and not errors, (outcome, errors[:1])
    stored = [fields[b"metadata"] for _, fields in redis.Redis.from_url(redis_server.url).xrange("obbmeta")]
    frames = consumer.collect_frames(stored)
    assert [r.frame_num for r in frames] == [n for n, _ in sent]  # one minimal-schema payload per frame
    for record, (_, objects) in zip(frames, sent):
        assert [(o.class_id, o.label, tuple(np.float32(o.xywhr))) for o in record.objects] == [
            (c, label, tuple(np.float32(x))) for c, label, x in objects]

"""A real GStreamer 1.22 pipeline: a Python element attaches a batch meta + OBBs to every buffer, tee / queue
branches carry them, one branch forces a buffer copy (NVIDIA's batch copy func + our C copy_func), readers
downstream get the boxes back with from_gst_buffer + read_obbs, and every buffer's metadata is released."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import readback

from obbmeta import nvds

gi = pytest.importorskip("gi")
gi.require_version("Gst", "1.0")
gi.require_version("GstBase", "1.0")
from gi.repository import GObject, Gst, GstBase  # noqa: E402

Gst.init(None)

W, H = 64, 48
NUM_BUFFERS = 1000
CLASS_NAMES = ["plane", "ship", "vehicle"]


def expected_boxes(n: int) -> np.ndarray:
    """The boxes of buffer n (fully determined by n, so every reader can check every buffer)."""
    k = n % 7 + 1
    i = np.arange(k, dtype=np.float32)
    return np.column_stack([5 + 8 * i, 5 + (n % 38) + 0 * i, 2 + 0.5 * i, 1 + 0.5 * i,
                            0.01 * n + 0.1 * i]).astype(np.float32)


def _templates():
    caps = Gst.Caps.new_any()
    return (Gst.PadTemplate.new("src", Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, caps),
            Gst.PadTemplate.new("sink", Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, caps))


class ObbAttach(GstBase.BaseTransform):
    """What a pipeline without nvstreammux does: create the batch meta, attach it, write the detections."""
    __gstmetadata__ = ("obbmeta test attach", "Filter/Metadata", "attaches NvDsBatchMeta + OBBs", "obbmeta")
    __gsttemplates__ = _templates()

    def __init__(self):
        super().__init__()
        self.set_in_place(True)
        self.count = 0
        self.errors: list[str] = []
        self.batch_addresses: dict[int, int] = {}

    def do_transform_ip(self, buf):
        try:
            n = self.count
            self.count += 1
            batch = nvds.BatchMeta.create(1)
            frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=n)
            x = expected_boxes(n)
            nvds.attach_obbs(batch, frame, xywhr=x, scores=np.full(len(x), 0.5, np.float32),
                             labels=np.arange(len(x)) % 3, class_names=CLASS_NAMES, component_id=2)
            batch.attach_to_gst_buffer(buf)
            self.batch_addresses[n] = batch.address
        except Exception as exc:  # noqa: BLE001 - reported by the test, not swallowed
            self.errors.append(repr(exc))
            return Gst.FlowReturn.ERROR
        return Gst.FlowReturn.OK


class ObbCheck(GstBase.BaseTransform):
    """An in-place (writable) element after a tee: GStreamer copies the shared buffer and its NvDsMeta first."""
    __gstmetadata__ = ("obbmeta test check", "Filter/Metadata", "reads OBBs back", "obbmeta")
    __gsttemplates__ = _templates()

    def __init__(self):
        super().__init__()
        self.set_in_place(True)
        self.seen: list[tuple[int, bool]] = []
        self.errors: list[str] = []
        self.batch_addresses: dict[int, int] = {}

    def do_transform_ip(self, buf):
        result = check_buffer(buf, self.errors)
        self.seen.append(result)
        self.batch_addresses[result[0]] = nvds.BatchMeta.from_gst_buffer(buf).address
        return Gst.FlowReturn.OK


GObject.type_register(ObbAttach)
GObject.type_register(ObbCheck)
Gst.Element.register(None, "obbmetatestattach", Gst.Rank.NONE, ObbAttach)
Gst.Element.register(None, "obbmetatestcheck", Gst.Rank.NONE, ObbCheck)


def check_buffer(buf, errors: list[str]) -> tuple[int, bool]:
    try:
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        (frame,) = batch.frames
        # List order is not preserved by copies (NVIDIA's copy prepends): match the boxes by centre x.
        got = sorted(readback.pairs(frame), key=lambda pair: pair[1].xywhr[0])
        n = frame.frame_number
        want = expected_boxes(n)
        ok = (len(got) == len(want) and all(obb.source == "user_meta" for _, obb in got)
              and np.allclose([obb.xywhr for _, obb in got], want, atol=1e-5)
              and [info.label for info, _ in got] == [CLASS_NAMES[i % 3] for i in range(len(want))]
              and frame.infer_done)
        return n, bool(ok)
    except Exception as exc:  # noqa: BLE001
        errors.append(repr(exc))
        return -1, False


def test_obbs_survive_tee_queue_and_buffer_copies_for_1000_buffers():
    before = nvds.live_payloads()
    pipeline = Gst.parse_launch(
        f"videotestsrc num-buffers={NUM_BUFFERS} ! video/x-raw,format=GRAY8,width={W},height={H},framerate=1000/1 "
        "! obbmetatestattach name=attach ! tee name=t "
        "t. ! queue ! obbmetatestcheck name=check ! fakesink sync=false "
        "t. ! queue ! fakesink name=probed sync=false")
    attach, check = pipeline.get_by_name("attach"), pipeline.get_by_name("check")
    probed: list[tuple[int, bool]] = []
    probe_errors: list[str] = []
    held = []  # keeps every buffer shared by the tee, so the writable branch must copy each one
    lock = threading.Lock()

    def probe(pad, info):
        buf = info.get_buffer()
        result = check_buffer(buf, probe_errors)
        with lock:
            probed.append(result)
            held.append(buf)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("probed").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    assert msg is not None, "the pipeline did not finish within 60 s"
    assert msg.type == Gst.MessageType.EOS, msg.parse_error()
    assert attach.errors == [] and check.errors == [] and probe_errors == []
    assert attach.count == NUM_BUFFERS
    for seen in (check.seen, probed):
        assert [n for n, _ in seen] == list(range(NUM_BUFFERS))
        assert all(ok for _, ok in seen)
    # The writable branch really worked on copies made by NVIDIA's nvds_batch_meta_copy_func.
    copied = sum(check.batch_addresses[n] != attach.batch_addresses[n] for n in range(NUM_BUFFERS))
    assert copied == NUM_BUFFERS
    held.clear()
    del pipeline, attach, check, msg
    # Every payload written or copied was released by DeepStream's release functions.
    assert nvds.live_payloads() == before


def test_from_gst_buffer_without_a_batch_meta_says_so():
    buf = Gst.Buffer.new_allocate(None, 16, None)
    with pytest.raises(LookupError, match="carries no NvDsBatchMeta"):
        nvds.BatchMeta.from_gst_buffer(buf)


def test_a_batch_attached_to_a_buffer_is_owned_by_it():
    before = nvds.live_payloads()
    buf = Gst.Buffer.new_allocate(None, 16, None)
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(width=100, height=100)
    nvds.attach_obbs(batch, frame, xywhr=np.array([[10, 10, 4, 4, 0]], np.float32))
    batch.attach_to_gst_buffer(buf)
    assert not batch.owned
    found = nvds.BatchMeta.from_gst_buffer(hash(buf))  # the pyds convention: an int GstBuffer*
    assert found.address == batch.address and found.max_frames == 1
    with pytest.raises(ValueError, match="only a batch made by BatchMeta.create"):
        batch.attach_to_gst_buffer(buf)
    assert nvds.live_payloads() == before + 1
    del buf  # the buffer's NvDsMeta release function destroys the batch
    assert nvds.live_payloads() == before


"""Batched NVMM buffers as nvstreammux makes them (one NvBufSurface of 4 frames + a batch meta of 4 frame metas),
built in system memory so they run on the CPU: every frame meta gets the detections of the surface its batch_id
names, and mode=draw paints into that surface."""
from __future__ import annotations

import numpy as np
import pytest
import readback
import torch
from pipelines import buffer_probe, run
from surfaces import CudaSurface, HostSurface

from obbmeta import frames as obbframes
from obbmeta import nvds
from obbmeta.gst import Gst
from obbmeta.infer import Detector
from obbmeta.nvds import layouts
from obbmeta.osd import draw_obbs
from obbmeta.palette import PALETTE_RGB as PALETTE

W, H, BATCH = 96, 64, 4
ORDER = [2, 0, 3, 1]  # batch_id of frame metas 0..3 (frame_meta_list order): routing must follow batch_id


KINDS = ["host", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device and NVIDIA's libnvbufsurface (GPU machine)"))]


def batch_buffers(n, rng, fmt="RGBA", kind="host"):
    """n buffers of BATCH frames each, with their surfaces (kept alive by the caller) and the frames' pixels."""
    out = []
    for k in range(n):
        if fmt == "RGBA":
            imgs = [rng.integers(0, 256, (H, W, 4), dtype=np.uint8) for _ in range(BATCH)]
        else:
            imgs = [rng.integers(16, 236, (H, W), dtype=np.uint8) for _ in range(BATCH)]
        surface = HostSurface(imgs, fmt) if kind == "host" else CudaSurface(imgs, fmt)
        buf = Gst.Buffer.new_wrapped(surface.as_bytes())
        buf.pts = k * Gst.SECOND // 30
        batch = nvds.BatchMeta.create(BATCH)
        for i in range(BATCH):
            f = batch.add_frame(source_id=10 + i, width=W, height=H, frame_num=k)
            layouts.FrameMetaHead.from_address(f.address).batch_id = ORDER[i]
        batch.attach_to_gst_buffer(buf)
        out.append((buf, surface, [s.copy() for s in [surface.plane(i) for i in range(BATCH)]]))
    return out


def caps(fmt):
    return f"video/x-raw(memory:NVMM),format={fmt},width={W},height={H},framerate=30/1"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", ["RGBA", "NV12"])
def test_each_frame_meta_gets_the_detections_of_its_own_surface(fmt, kind):
    rng = np.random.default_rng(11)
    tail = "! fakesink name=s" if fmt == "NV12" else "! obboverlay mode=draw thickness=1 ! fakesink name=s"
    device = "cpu" if kind == "host" else "cuda"  # the model runs where the frames are
    p = Gst.parse_launch(f"appsrc name=src caps={caps(fmt)} format=time "
                         f"! obbinfer model=obb_toy_models:toy input-size=64 device={device} {tail}")
    items = batch_buffers(6, rng, fmt, kind)
    got = []

    def on(buf):
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        got.append({f.source_id: (f.batch_id, f.infer_done, nvds.read_boxes(f)) for f in batch.frames})

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    src = p.get_by_name("src")
    for buf, _, _ in items:
        src.emit("push-buffer", buf)
    src.emit("end-of-stream")
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    detector = Detector("obb_toy_models:toy", input_size=64)
    for (_, surface, originals), frames in zip(items, got):
        assert sorted(frames) == [10, 11, 12, 13]
        for i in range(BATCH):
            batch_id, done, rows = frames[10 + i]
            assert batch_id == ORDER[i] and done
            if fmt == "RGBA":
                frame = torch.from_numpy(originals[batch_id])
            else:
                frame = (torch.from_numpy(originals[batch_id]), torch.from_numpy(surface.plane(batch_id, 1).copy()))
            device = "cpu" if kind == "host" else "cuda"  # the model ran where the frames are
            frame = tuple(t.to(device) for t in frame) if isinstance(frame, tuple) else frame.to(device)
            (want,) = detector([frame], fmt)
            want = want.to("cpu")
            order = np.argsort(rows.scores)[::-1]
            assert np.allclose(rows.xywhr[order], want.xywhr.numpy(), atol=1e-3), (kind, batch_id)
            assert rows.labels[order].tolist() == want.labels.tolist()
            if fmt == "RGBA":  # drawn in place into surface batch_id, exactly as draw_obbs paints
                ref = torch.from_numpy(originals[batch_id].copy())
                colors = torch.tensor([PALETTE[c % 20] + (255,) for c in rows.labels], dtype=torch.uint8)
                draw_obbs(ref, torch.from_numpy(rows.xywhr), colors=colors, thickness=1)
                assert np.array_equal(surface.plane(batch_id), ref.numpy())


def test_mode_meta_plans_nvdsosd_lines_for_every_frame_of_the_batch():
    rng = np.random.default_rng(5)
    p = Gst.parse_launch(f"appsrc name=src caps={caps('RGBA')} format=time "
                         "! obbinfer model=obb_toy_models:toy input-size=64 ! obboverlay mode=meta ! fakesink name=s")
    items = batch_buffers(2, rng)
    seen = []

    def on(buf):
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        for f in batch.frames:
            objs = readback.pairs(f)
            lines = nvds.read_display_lines(f)
            seen.append((len(objs), len(lines)))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    src = p.get_by_name("src")
    for buf, _, _ in items:
        src.emit("push-buffer", buf)
    src.emit("end-of-stream")
    assert run(p).eos and not errors
    assert len(seen) == 2 * BATCH
    for n_objs, n_lines in seen:
        assert n_objs > 0 and n_objs * 2 <= n_lines <= n_objs * 4  # up to 4 edges per box, clipped to the frame


def test_obboverlay_without_metadata_passes_buffers_through():
    p = Gst.parse_launch("videotestsrc num-buffers=5 ! video/x-raw,format=RGBA,width=64,height=48 "
                         "! obboverlay mode=draw ! fakesink")
    assert run(p).eos


def test_bad_overlay_mode_is_refused():
    p = Gst.parse_launch("videotestsrc num-buffers=5 ! video/x-raw,format=RGBA,width=64,height=48 "
                         "! obboverlay name=o mode=paint ! fakesink")
    outcome = run(p, timeout_s=30)
    assert outcome.error and "mode='paint' refused" in outcome.error


def empty_batches(n, with_meta):
    """NVMM buffers of a batch with no filled surface (numFilled 0), each with a batch meta of no frames (as
    nvstreammux sends when its sources had nothing) or without one."""
    out = []
    for k in range(n):
        surface = HostSurface([np.zeros((H, W, 4), np.uint8)] * BATCH, num_filled=0)
        buf = Gst.Buffer.new_wrapped(surface.as_bytes())
        buf.pts = k * Gst.SECOND // 30
        if with_meta:
            nvds.BatchMeta.create(BATCH).attach_to_gst_buffer(buf)
        out.append((buf, surface))
    return out


@pytest.mark.parametrize("chain,with_meta", [
    ("obbinfer model=obb_toy_models:toy input-size=64 ! obboverlay mode=draw ! obbtrack ! obbmessage", True),
    ("obboverlay mode=draw ! obbtrack ! obboverlay mode=meta ! obbmessage", False),
])
def test_a_batch_with_no_filled_surface_passes_every_element_untouched(chain, with_meta):
    p = Gst.parse_launch(f"appsrc name=src caps={caps('RGBA')} format=time ! {chain} ! fakesink name=s")
    items = empty_batches(3, with_meta)
    seen = []

    def on(buf):
        with obbframes.map_surface(buf) as s:
            assert (s.num_filled, s.surfaces) == (0, ())
        try:
            batch = nvds.BatchMeta.from_gst_buffer(buf)
        except LookupError:
            seen.append(None)
        else:
            seen.append([len(readback.pairs(f)) for f in batch.frames])

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    src = p.get_by_name("src")
    for buf, _ in items:
        src.emit("push-buffer", buf)
    src.emit("end-of-stream")
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert seen == ([[]] * 3 if with_meta else [None] * 3)

"""NVIDIA's own nvvideoconvert makes real memory:NVMM buffers (GPU machine, shared/tools/gpu-gstreamer): obbinfer and
obboverlay take them as zero-copy CUDA views, pixel-identical to the system-memory frames of a tee branch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from pipelines import buffer_probe, run

from obbmeta import frames, nvds
from obbmeta.gst._gi import Gst
from obbmeta.infer import Detector
from obbmeta.osd import draw_obbs
from obbmeta.palette import PALETTE

pytestmark = pytest.mark.skipif(Gst.ElementFactory.find("nvvideoconvert") is None or not torch.cuda.is_available(),
                                reason="needs NVIDIA's nvvideoconvert and a CUDA device (GPU machine)")
W, H, N = 320, 240, 20


def system_planes(buf, fmt):
    ok, info = buf.map(Gst.MapFlags.READ)
    data = np.frombuffer(info.data, np.uint8).copy()
    buf.unmap(info)
    if fmt == "RGBA":
        return (data[: W * H * 4].reshape(H, W, 4),)
    return data[: W * H].reshape(H, W, 1), data[W * H: W * H * 3 // 2].reshape(H // 2, W // 2, 2)


@pytest.mark.parametrize("fmt", ["RGBA", "NV12"])
def test_nvmm_frames_reach_the_model_as_views_equal_to_system_frames(fmt):
    draw = "! obboverlay name=draw mode=draw thickness=2 " if fmt == "RGBA" else ""
    p = Gst.parse_launch(
        f"videotestsrc num-buffers={N} pattern=ball ! video/x-raw,format={fmt},width={W},height={H} ! tee name=t "
        "t. ! queue ! fakesink name=sys "
        f"t. ! queue ! nvvideoconvert ! video/x-raw(memory:NVMM),format={fmt} ! identity name=nvmm "
        f"! obbinfer name=infer model=obb_toy_models:toy input-size=160 device=cuda {draw}! fakesink name=out")
    sys_frames, views, objects, drawn, seen_by_model = {}, {}, {}, {}, []

    class Recording(Detector):  # what obbinfer hands the model's pre-processing: the surface's own memory
        def preprocess(self, frames, pixel_format):
            first = frames[0][0] if isinstance(frames[0], tuple) else frames[0]
            seen_by_model.append((first.is_cuda, first.data_ptr()))
            return super().preprocess(frames, pixel_format)

    p.get_by_name("infer").detector = Recording("obb_toy_models:toy", input_size=160, device="cuda")

    def on_nvmm(buf):
        with frames.map_surface(buf) as s:
            assert s.num_filled == 1 and s.mem_type in frames.CUDA_MEMORY and s.layout == "DeepStream 8.0+"
            t = s.surfaces[0].tensors()
            t = t if isinstance(t, tuple) else (t,)
            assert t[0].data_ptr() == s.surfaces[0].data_ptr + s.surfaces[0].planes[0].offset
            views[buf.pts] = tuple(v.cpu().numpy() for v in t)
            pointers.append(t[0].data_ptr())

    pointers = []

    def on_out(buf):
        (f,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        objects[buf.pts] = nvds.read_obbs_arrays(f)
        if fmt == "RGBA":
            with frames.map_surface(buf) as s:
                drawn[buf.pts] = s.surfaces[0].tensors().cpu().numpy()

    errors = buffer_probe(p.get_by_name("sys"), "sink", lambda b: sys_frames.__setitem__(b.pts, system_planes(b, fmt)))
    buffer_probe(p.get_by_name("nvmm"), "src", on_nvmm, errors)
    buffer_probe(p.get_by_name("out"), "sink", on_out, errors)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert len(views) == len(objects) == N
    assert seen_by_model == [(True, ptr) for ptr in pointers]  # zero-copy: the model's input came from dataPtr
    detector = Detector("obb_toy_models:toy", input_size=160, device="cuda")
    for pts, planes in sys_frames.items():
        for got, want in zip(views[pts], planes):
            assert np.array_equal(got, want), pts  # nvvideoconvert copied the frame exactly
        frame = tuple(torch.from_numpy(x).cuda() for x in planes)
        (want,) = detector([frame if fmt == "NV12" else frame[0]], fmt)
        rows = objects[pts]
        order = np.argsort(rows["confidence"])[::-1]
        assert np.allclose(rows["xywhr"][order], want.xywhr.cpu().numpy(), atol=1e-3)
        if fmt == "RGBA":
            ref = torch.from_numpy(planes[0].copy()).cuda()
            colors = torch.tensor([PALETTE[c % 20] + (255,) for c in rows["class_id"]], dtype=torch.uint8)
            draw_obbs(ref, torch.from_numpy(rows["xywhr"]).cuda(), colors=colors.cuda(), thickness=2)
            assert np.array_equal(drawn[pts], ref.cpu().numpy())

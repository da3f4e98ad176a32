"""``obboverlay``: the rotated boxes of every frame, for nvdsosd or drawn into the frames.

* ``mode=meta`` (default): ``add_obb_overlay`` per frame meta: each object's OBB as nvdsosd display-meta lines (any
  DeepStream version; ``native=true``: DS 9 rotated rects), labels moved to the top corner, AABB borders hidden
  when ``hide-aabb`` (``rect_params`` stays the box nvtracker tracks). Frames are not touched: any caps pass.
* ``mode=draw``: ``draw_obbs`` into the frames themselves (system memory, or NVMM surfaces on the GPU in place),
  for pipelines without nvdsosd: every object of the frame meta, its OBB where it has one, else its ``rect_params``
  box, in its class colour (``obbmeta.palette``), in the frame's channel order. It paints 8-bit packed RGB and
  negotiates only those formats, so a converter before it (videoconvert, nvvideoconvert) converts.
* ``follow-tracker=true`` (after nvtracker): ``obbmeta.track.FollowTracker`` first gives every tracked object an OBB
  (the detector's, moved with the tracker's box, or the track's prediction on frames without inference).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any

from ..osd.overlay import add_obb_overlay
from ._element import ObbmetaElement, one_of
from ._frames import DRAW_FORMATS, VideoFormat, caps_string, mapped_frames
from ._gi import Gst

MODES = ("meta", "draw")


class ObbOverlay(ObbmetaElement):
    element_name = "obboverlay"
    gtype_name = "GstObbOverlay"
    long_name = "obbmeta oriented-box overlay"
    klass = "Filter/Effect/Video"
    description = ("Draws the oriented boxes of the batch meta: as nvdsosd display-meta lines (mode=meta) or into "
                   "the frames (mode=draw)")
    debug_description = "obbmeta oriented-box overlay (nvdsosd lines or drawing)"
    _ready_only = frozenset({"mode", "follow-tracker", "queue-depth"})  # used when the element starts
    property_specs = {
        "mode": (str, "mode", "meta: display-meta lines for a downstream nvdsosd; draw: paint into the frames", "meta"),
        "thickness": (int, "thickness", "line width in pixels", 1, 64, 3),
        "hide-aabb": (bool, "hide AABB", "mode=meta: set rect_params.border_width=0 on objects with an OBB", True),
        "label": (bool, "label", "mode=meta: move each label to the top corner of its OBB", True),
        "native": (bool, "native", "mode=meta: DS 9 rotated display-meta rects instead of lines", False),
        "follow-tracker": (bool, "follow tracker", "after nvtracker: give every tracked object an OBB first (the "
                           "detector's moved with the tracker's box, else the track's prediction)", False),
        "queue-depth": (int, "queue depth", "mode=draw: buffers between the streaming thread, which queues each "
                        "batch's draw on the GPU and takes the next buffer, and the output thread, which waits for "
                        "the draw and pushes (as obbinfer's queue-depth); 0: each buffer waits for its draw before "
                        "the next is taken", 0, 64, 2),
    }
    _checks = {"mode": one_of(*MODES)}

    def __init__(self):
        super().__init__()
        self.follow = None
        self._streams: dict = {}  # device index -> the element's own CUDA stream for drawing

    latencies = property(ObbmetaElement.output_latencies, doc=ObbmetaElement.output_latencies.__doc__)

    def start(self) -> None:
        from ..track import FollowTracker

        self.follow = FollowTracker() if self.prop("follow-tracker") else None
        self._streams = {}
        if self.prop("mode") == "draw":
            from ..osd.draw import prepare_drawing

            prepare_drawing()  # the operator's first-call set-up here, not in the first buffer's draw
            if self.prop("queue-depth") > 0:
                self.open_output(self.prop("queue-depth"))

    def _stream(self, device: Any) -> Any:
        """The element's own CUDA stream on ``device`` (non-blocking, like obbinfer's): its draws never go on the
        legacy default stream, which would make them wait for every other library's GPU work in the process (the
        sources' uploads, the model) and make that work wait for them."""
        import torch

        stream = self._streams.get(device.index)
        if stream is None:
            stream = self._streams[device.index] = torch.cuda.Stream(device=device)
        return stream

    def reset(self) -> None:
        if self.follow is not None:
            self.follow.reset()

    def property_changed(self, name: str) -> None:
        if name == "mode":
            self.reconfigure_sink()  # the formats it takes changed: renegotiate with upstream

    def do_transform_caps(self, direction: Gst.PadDirection, caps: Gst.Caps, filter_: Gst.Caps) -> Gst.Caps:
        # An in-place element: the other pad takes what this one gets, narrowed in draw mode to what it paints, so
        # that a caps query from an upstream converter answers packed RGB and the converter converts.
        out = caps.copy()
        if self.prop("mode") == "draw":
            out = out.intersect(_DRAW_CAPS)
        if filter_ is not None:
            out = filter_.intersect_full(out, Gst.CapsIntersectMode.FIRST)
        return out

    def check_format(self, video: VideoFormat) -> None:
        if self.prop("mode") == "draw" and video.format not in DRAW_FORMATS:
            raise ValueError(f"mode=draw paints 8-bit packed RGB frames ({', '.join(DRAW_FORMATS)}), not "
                             f"{video.format}: put nvvideoconvert / videoconvert before it, or use mode=meta with "
                             "nvdsosd")

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        t_in = time.perf_counter()
        flow = self.downstream_flow()
        if flow != Gst.FlowReturn.OK:
            return flow  # downstream stopped taking buffers (EOS, flushing, not linked, an error)
        # with an output thread (mode=draw) every buffer leaves through it, in order, drawn or not
        return self.hand_over(buf, self._overlay(buf), t_in)

    def _overlay(self, buf: Gst.Buffer) -> Any:
        """The streaming thread's part of a buffer: the display meta planned, or the draw queued on the GPU (drawn,
        on the CPU); returns what is left (the wait for the GPU's draw), or None."""
        from .. import nvds

        try:
            batch = nvds.BatchMeta.from_gst_buffer(buf)
        except LookupError:
            return None  # nothing upstream wrote metadata: nothing to draw
        # One batch lock around the metadata work of the batch's frames: obbmeta's C calls under it keep the
        # interpreter lock, so a frame costs no handoff of it (obbmeta.nvds.batch.holds_lock). Mapping and drawing
        # run after it: nothing that waits for the GPU or another thread happens under the batch lock.
        with batch.locked():
            if self.follow is not None:
                for frame in batch.frames:
                    self.follow.update_frame(batch, frame, frame_size=(self.video.width, self.video.height))
            if self.prop("mode") == "meta":
                self._plan(batch)
                return None
            frames = batch.frames
            objects, offsets = nvds.read_boxes_batch(batch, frames)  # one C call for the batch
        return self._draw(buf, [f.batch_id for f in frames], objects, offsets)

    def _plan(self, batch: Any) -> None:
        size = (self.video.width, self.video.height)
        for frame in batch.frames:
            add_obb_overlay(batch, frame, width=self.prop("thickness"), hide_aabb=self.prop("hide-aabb"),
                            label=self.prop("label"), native=self.prop("native"), frame_size=size)

    def _draw(self, buf: Gst.Buffer, batch_ids: list, objects: Any, offsets: Any) -> Any:
        """Paint each frame meta's objects (rows ``offsets[k]:offsets[k + 1]`` of ``objects`` for the frame meta
        with ``batch_ids[k]``) into its surface: the batch's boxes and colours in one copy to the device and one
        draw (:func:`obbmeta.osd.draw_obbs_batch`). On the GPU the draw is queued on the element's stream and the
        wait for it returned (the surfaces stay mapped until it has run); on the CPU it is done, and None
        returned."""
        import numpy as np
        import torch

        from ..osd import draw_obbs_batch

        mapping = contextlib.ExitStack()
        try:
            views = mapping.enter_context(mapped_frames(buf, self.video, write=True))
            for batch_id in batch_ids:
                if not 0 <= batch_id < len(views):
                    raise ValueError(f"frame meta batch_id {batch_id} has no surface (the buffer holds "
                                     f"{len(views)})")
            counts = np.diff(offsets)
            images = [views[b].image for b, n in zip(batch_ids, counts) if n]
            if not images:
                return mapping.close()
            device = images[0].device
            stream = self._stream(device) if device.type == "cuda" else None
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                # upstream pushed the frames ready: nothing of theirs to wait for on the element's own stream
                kept = np.concatenate([[0], np.cumsum(counts[counts > 0])])
                xywhr = torch.from_numpy(objects.xywhr).to(device, non_blocking=True)
                colors = _colors(objects.labels, views[batch_ids[0]].format).to(device, non_blocking=True)
                draw_obbs_batch(images, xywhr, kept.tolist(), colors, thickness=self.prop("thickness"))
            if stream is None:
                return mapping.close()
            done = torch.cuda.Event(blocking=True)  # the waiting thread sleeps (no spin) without the GIL
            done.record(stream)
        except BaseException:
            mapping.close()
            raise

        def finish() -> None:  # drawn before the buffer moves on
            with mapping:
                done.synchronize()

        return finish


_DRAW_CAPS = Gst.Caps.from_string(caps_string(DRAW_FORMATS))


def _colors(class_ids: Any, fmt: str) -> Any:
    """Per-object palette colours in the channel order of pixel format ``fmt`` (alpha / padding 255)."""
    import numpy as np
    import torch

    from ..frames.pixels import FORMATS
    from ..palette import PALETTE_RGB

    table = np.asarray(PALETTE_RGB, dtype=np.uint8)[np.asarray(class_ids, dtype=np.int64) % len(PALETTE_RGB)]
    layout = FORMATS[fmt]
    out = np.full((len(table), layout.planes[0].comps), 255, dtype=np.uint8)
    out[:, list(layout.rgb_order)] = table
    return torch.from_numpy(out)

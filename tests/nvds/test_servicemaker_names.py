"""BatchMeta / FrameMeta read under pyservicemaker's names (frame_number, source_width, n_frames, ...), one name per
field (NvDsFrameMeta's C names are not a second one)."""
import pytest

from obbmeta import nvds
from obbmeta.nvds import layouts


def test_frame_fields_under_pyservicemaker_names(make_batch):
    batch = make_batch(max_frames=2, frames=0)
    batch.add_frame(source_id=3, width=640, height=480, frame_num=7)
    frame = batch.add_frame(source_id=5, width=1280, height=720, frame_num=41, pad_index=9, buf_pts=123456789)
    head = layouts.FrameMetaHead.from_address(frame.address)
    head.ntp_timestamp = 987654321
    assert (frame.frame_number, frame.source_id, frame.pad_index, frame.batch_id) == (41, 5, 9, 1)
    assert (frame.source_width, frame.source_height) == (1280, 720)
    assert (frame.pipeline_width, frame.pipeline_height) == (1280, 720)
    assert (frame.buffer_pts, frame.ntp_timestamp) == (123456789, 987654321)


@pytest.mark.parametrize("old, new", [("frame_num", "frame_number"), ("buf_pts", "buffer_pts"),
                                      ("source_frame_width", "source_width"), ("source_frame_height", "source_height")])
def test_one_name_per_field(make_batch, old, new):
    frame = make_batch(frames=0).add_frame(source_id=1, width=320, height=200, frame_num=12, buf_pts=5)
    assert getattr(frame, new) == {"frame_number": 12, "buffer_pts": 5, "source_width": 320, "source_height": 200}[new]
    assert not hasattr(frame, old)


def test_batch_counts_and_frame_items(make_batch):
    batch = make_batch(max_frames=4, frames=3)
    assert batch.n_frames == 3 and batch.max_frames == 4
    assert not hasattr(batch, "num_frames")
    assert list(batch.frame_items) == batch.frames
    assert [f.frame_number for f in batch.frame_items] == [0, 1, 2]


def test_the_names_are_documented_typed_properties():
    for cls, names in ((nvds.FrameMeta, ("frame_number", "source_width", "source_height", "pad_index", "batch_id",
                                         "buffer_pts", "ntp_timestamp", "pipeline_width", "pipeline_height")),
                       (nvds.BatchMeta, ("n_frames", "max_frames", "frame_items"))):
        for name in names:
            prop = getattr(cls, name)
            assert isinstance(prop, property) and prop.__doc__, name
            assert "return" in prop.fget.__annotations__, name

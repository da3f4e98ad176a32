import math

import torch

from obbmeta import OrientedBoxes
from obbmeta.models import CONTAINER_INPUT_SIZE, WEIGHTS_DIR, container_detector, load_container_detector
from obbmeta.models.containers import secondary, to_crop
from obbmeta.models.train_containers import make_crops
from obbmeta.secondary.detect import regions, to_frame


def test_the_factory_loads_the_bundled_small_container_detector():
    model = container_detector()
    assert model.class_names == ["container"] and not model.training
    assert CONTAINER_INPUT_SIZE == (256, 64)
    assert (WEIGHTS_DIR / "container.pt").stat().st_size < 2_000_000
    with torch.no_grad():
        out = model(torch.rand(2, 3, 64, 256))
    assert out.shape == (2, 4 + 1 + 1, (64 // 8) * (256 // 8))
    assert sum(p.numel() for p in load_container_detector().parameters()) < 1_000_000


def test_to_crop_inverts_the_secondary_detectors_map_back_to_the_frame():
    parents = torch.tensor([[200.0, 150.0, 110.0, 22.0, 0.7], [60.0, 80.0, 18.0, 90.0, -1.2]])
    for parent, region in zip(parents, regions(parents, (256, 64), True, True, 0.05, "long-side")):
        kids = torch.tensor([[parent[0] + 3, parent[1] - 2, 12.0, 5.0, float(parent[4])],
                             [parent[0] - 8, parent[1] + 1, 10.0, 4.0, float(parent[4]) + 0.1]])
        local = to_crop(kids, region)
        back = to_frame(OrientedBoxes(local, torch.ones(2), torch.zeros(2, dtype=torch.int64)), region, (256, 64))
        assert torch.allclose(back.xywhr[:, :4], kids[:, :4], atol=1e-3)
        assert all(abs(math.remainder(a - b, math.pi)) < 1e-4 for a, b in zip(back.xywhr[:, 4], kids[:, 4]))
        assert (local[:, 0] > 0).all() and (local[:, 0] < 256).all() and (local[:, 1] > 0).all()


def test_training_crops_are_the_elements_crops_and_are_seeded():
    a, b = make_crops([3], 1), make_crops([3], 1)
    assert torch.equal(a["crops"], b["crops"]) and all(torch.equal(x, y) for x, y in zip(a["targets"], b["targets"]))
    assert a["crops"].shape[1:] == (64, 256, 3) and sum(len(t) for t in a["targets"]) > 0
    assert secondary().detector.input_size == (256, 64)


def test_the_bundled_detector_finds_the_containers_of_an_upright_crop():
    from obbmeta.eval import evaluate

    data = make_crops([1_000_000_321], 1)
    sec = secondary(container_detector(), conf=0.25)
    with torch.no_grad():
        out = sec.detector.forward(data["crops"].permute(0, 3, 1, 2).float() / 255)
    from obbmeta import decode

    dets = decode.yolo_obb(out, conf=0.25, iou=0.5)
    truth = [OrientedBoxes(t, torch.ones(len(t)), torch.zeros(len(t), dtype=torch.int64)) for t in data["targets"]]
    assert evaluate(dets, truth, num_classes=1).map50 > 0.8

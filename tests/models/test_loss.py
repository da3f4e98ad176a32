import math

import pytest
import reference
import torch

from obbmeta.models.data import dihedral
from obbmeta.models.detector import STRIDE, cell_centres
from obbmeta.models.loss import assign, hellinger


def b(*rows):
    return torch.tensor(rows, dtype=torch.float32)


def test_the_box_loss_is_zero_for_the_same_rectangle_written_three_ways():
    box = b([50.0, 60.0, 40.0, 10.0, 0.3])
    same = b([50.0, 60.0, 40.0, 10.0, 0.3 + math.pi], [50.0, 60.0, 10.0, 40.0, 0.3 + math.pi / 2])
    assert torch.allclose(hellinger(same, box.expand(2, 5)), torch.zeros(2), atol=1e-3)


@pytest.mark.parametrize("column, steps", [(0, [1.0, 3.0, 6.0]), (1, [1.0, 2.0, 4.0]), (4, [0.05, 0.2, 0.5]),
                                           (2, [4.0, 10.0, 20.0])])
def test_the_box_loss_grows_with_each_kind_of_error(column, steps):
    truth = b([50.0, 60.0, 40.0, 10.0, 0.3])
    worse = truth.repeat(len(steps) + 1, 1)
    worse[1:, column] += torch.tensor(steps)
    loss = hellinger(worse, truth.expand_as(worse))
    assert loss[0] < 0.02
    assert (loss[1:] > loss[:-1]).all()


def test_each_box_gets_the_cell_nearest_its_centre_and_a_shared_cell_goes_to_the_nearer_box():
    boxes = b([12.0, 12.0, 6.0, 6.0, 0.0], [21.0, 12.0, 6.0, 6.0, 0.0], [100.0, 40.0, 60.0, 8.0, 0.5])[None]
    index = assign(boxes, torch.ones(1, 3, dtype=torch.bool), 64, 128)[0]
    gx, gy = cell_centres(64, 128)
    for g, (cx, cy) in enumerate([(12.0, 12.0), (21.0, 12.0), (100.0, 40.0)]):
        nearest = int(((gx - cx) ** 2 + (gy - cy) ** 2).argmin())
        assert index[nearest] == g
    cells = (index >= 0).nonzero().flatten()
    for n in cells.tolist():  # every positive cell is within 1.5 cells of its box's centre and no nearer another
        d = torch.hypot(gx[n] - boxes[0, :, 0], gy[n] - boxes[0, :, 1])
        assert d[index[n]] <= 1.5 * STRIDE + 1e-4 and d[index[n]] == d.min()


def test_padding_rows_are_never_assigned():
    boxes = b([12.0, 12.0, 6.0, 6.0, 0.0], [40.0, 40.0, 6.0, 6.0, 0.0])[None]
    index = assign(boxes, torch.tensor([[True, False]]), 64, 64)
    assert set(index.unique().tolist()) == {-1, 0}


@pytest.mark.parametrize("transpose, flip_x, flip_y", [(t, x, y) for t in (0, 1) for x in (0, 1) for y in (0, 1)])
def test_dihedral_augmentation_moves_each_box_exactly_with_its_pixels(transpose, flip_x, flip_y):
    size = 64
    box = b([20.0, 30.0, 24.0, 8.0, 0.4])
    image = torch.zeros(1, size, size, 1)
    ys, xs = torch.meshgrid(torch.arange(size) + 0.5, torch.arange(size) + 0.5, indexing="ij")
    poly = reference.rect(*box[0].tolist())
    import shapely

    image[0, ..., 0] = torch.from_numpy(shapely.contains_xy(poly, xs.numpy(), ys.numpy()))
    out_img, out_box = dihedral(image, box[None], bool(transpose), bool(flip_x), bool(flip_y))
    moved = reference.rect(*out_box[0, 0].tolist())
    expected = shapely.contains_xy(moved, xs.numpy(), ys.numpy())
    assert (out_img[0, ..., 0].numpy().astype(bool) == expected).all()

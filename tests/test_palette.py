"""One palette (obbmeta.palette) in the two forms the outputs want; the older ambiguous name is gone."""
import pytest

from obbmeta import nvds, osd, palette


def test_one_palette_in_two_forms_named_for_what_they_are():
    assert len(palette.PALETTE_RGB) == len(palette.PALETTE_RGBA) == 20
    for (r, g, b), rgba in zip(palette.PALETTE_RGB, palette.PALETTE_RGBA):
        assert rgba == (r / 255, g / 255, b / 255, 1.0)
    assert osd.PALETTE_RGB is palette.PALETTE_RGB and osd.PALETTE_RGBA is palette.PALETTE_RGBA


@pytest.mark.parametrize("module", [palette, osd, nvds])
def test_the_name_that_meant_two_forms_is_gone(module):
    with pytest.raises(AttributeError):
        module.PALETTE  # noqa: B018 - RGB in palette and osd, RGBA in nvds: one name for two forms


def test_class_colours_wrap_around_the_palette():
    assert palette.class_color(23) == palette.PALETTE_RGB[3]
    assert palette.class_color_rgba(23) == palette.PALETTE_RGBA[3]


def test_unknown_names_are_still_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'PALLETE'"):
        palette.PALLETE  # noqa: B018

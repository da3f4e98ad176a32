"""One palette (obbmeta.palette) in the two forms the outputs want; the older names point at them."""
from obbmeta import nvds, osd, palette


def test_one_palette_in_two_forms_named_for_what_they_are():
    assert len(palette.PALETTE_RGB) == len(palette.PALETTE_RGBA) == 20
    for (r, g, b), rgba in zip(palette.PALETTE_RGB, palette.PALETTE_RGBA):
        assert rgba == (r / 255, g / 255, b / 255, 1.0)


def test_the_older_names_are_the_same_tables():
    assert palette.PALETTE is osd.PALETTE is palette.PALETTE_RGB
    assert nvds.PALETTE is palette.PALETTE_RGBA


def test_class_colours_wrap_around_the_palette():
    assert palette.class_color(23) == palette.PALETTE_RGB[3]
    assert palette.class_color_rgba(23) == palette.PALETTE_RGBA[3]

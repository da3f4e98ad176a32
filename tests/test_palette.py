"""One palette (obbmeta.palette) in the two forms the outputs want; the older ambiguous name warns."""
import pytest

from obbmeta import nvds, osd, palette


def test_one_palette_in_two_forms_named_for_what_they_are():
    assert len(palette.PALETTE_RGB) == len(palette.PALETTE_RGBA) == 20
    for (r, g, b), rgba in zip(palette.PALETTE_RGB, palette.PALETTE_RGBA):
        assert rgba == (r / 255, g / 255, b / 255, 1.0)
    assert osd.PALETTE_RGB is palette.PALETTE_RGB and osd.PALETTE_RGBA is palette.PALETTE_RGBA


def test_the_older_name_palette_warns_and_keeps_its_old_meaning():
    with pytest.warns(DeprecationWarning, match="PALETTE_RGB"):
        assert palette.PALETTE is palette.PALETTE_RGB
    with pytest.warns(DeprecationWarning, match="PALETTE_RGB"):
        assert osd.PALETTE is palette.PALETTE_RGB
    with pytest.warns(DeprecationWarning, match="PALETTE_RGBA"):
        assert nvds.PALETTE is palette.PALETTE_RGBA  # RGBA there: the one name that meant two forms


def test_class_colours_wrap_around_the_palette():
    assert palette.class_color(23) == palette.PALETTE_RGB[3]
    assert palette.class_color_rgba(23) == palette.PALETTE_RGBA[3]


def test_unknown_names_are_still_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'PALLETE'"):
        palette.PALLETE  # noqa: B018


def test_the_warning_points_at_the_callers_line():
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        osd.PALETTE  # noqa: B018
        palette.PALETTE  # noqa: B018
    assert [w.filename for w in seen] == [__file__, __file__]

"""What GStreamer sees of each element (GType name, metadata, pad templates, properties with their flags, defaults and
ranges, signals, debug category) stays what ``elements.json`` recorded; a user's subclass of an element inherits all
of it and runs.

``python tests/gst/test_element_declarations.py --write`` rewrites ``elements.json`` from the code (only when a
change to an element is meant to be seen by users)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

FIXTURE = Path(__file__).with_name("elements.json")


def _jsonable(value):
    if isinstance(value, float) and value != value:
        return "nan"
    return value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)


def describe_element(name: str) -> dict:
    """Everything gst-inspect-1.0 shows of element ``name`` that its Python class declares."""
    from obbmeta.gst._gi import GObject, Gst

    factory = Gst.ElementFactory.find(name)
    gtype = factory.get_element_type()
    element = Gst.ElementFactory.make(name, None)
    keys = {"long-name": Gst.ELEMENT_METADATA_LONGNAME, "klass": Gst.ELEMENT_METADATA_KLASS,
            "description": Gst.ELEMENT_METADATA_DESCRIPTION, "author": Gst.ELEMENT_METADATA_AUTHOR}
    properties = {}
    for spec in GObject.list_properties(gtype):
        if spec.owner_type != gtype:
            continue  # BaseTransform's own (name, parent, qos)
        row = {"type": spec.value_type.name, "nick": spec.nick, "blurb": spec.blurb,
               "flags": int(spec.flags), "default": _jsonable(spec.default_value),
               "value": _jsonable(element.get_property(spec.name))}
        for bound in ("minimum", "maximum"):
            if hasattr(spec, bound):
                row[bound] = _jsonable(getattr(spec, bound))
        properties[spec.name] = row
    signals = {}
    for signal_id in GObject.signal_list_ids(gtype):
        q = GObject.signal_query(signal_id)
        signals[q.signal_name] = {"flags": int(q.signal_flags), "return": q.return_type.name,
                                  "params": [t.name for t in q.param_types]}
    category = next(c for c in Gst.debug_get_all_categories() if c.get_name() == name)
    return {
        "gtype": gtype.name,
        "parent": gtype.parent.name,
        "metadata": {k: factory.get_metadata(v) for k, v in keys.items()},
        "pad-templates": [{"name": t.name_template, "direction": int(t.direction), "presence": int(t.presence),
                           "caps": t.get_caps().to_string()} for t in factory.get_static_pad_templates()],
        "properties": properties,
        "signals": signals,
        "debug-category": category.get_description(),
    }


def describe_all() -> dict:
    import obbmeta.gst

    obbmeta.gst.register()
    return {name: describe_element(name) for name in obbmeta.gst.ELEMENTS}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/gst/test_element_declarations.py --write")
    FIXTURE.write_text(json.dumps(describe_all(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
else:
    import pytest

    @pytest.fixture(scope="module")
    def recorded() -> dict:
        return json.loads(FIXTURE.read_text())

    @pytest.mark.parametrize("name", json.loads(FIXTURE.read_text()))
    def test_each_element_shows_gstreamer_what_was_recorded(recorded, name):
        assert describe_element(name) == recorded[name]

    def test_the_recorded_elements_are_the_registered_ones(recorded):
        import obbmeta.gst

        assert tuple(recorded) == tuple(sorted(obbmeta.gst.ELEMENTS))

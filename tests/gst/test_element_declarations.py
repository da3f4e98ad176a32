"""What GStreamer sees of each element (GType name, metadata, pad templates, properties with their flags, defaults and
ranges, signals, debug category) stays what ``elements.json`` recorded; a user's subclass of an element inherits all
of it and runs.

``python tests/gst/test_element_declarations.py --write`` rewrites ``elements.json`` from the code (only when a
change to an element is meant to be seen by users)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import readback
from pipelines import run

import obbmeta.gst
from obbmeta import nvds
from obbmeta.gst import GObject, Gst
from obbmeta.gst.track import ObbTrack

FIXTURE = Path(__file__).with_name("elements.json")


def _jsonable(value):
    if isinstance(value, float) and value != value:
        return "nan"
    return value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)


def describe_element(name: str) -> dict:
    """Everything gst-inspect-1.0 shows of element ``name`` that its Python class declares."""
    factory = Gst.ElementFactory.find(name)
    gtype = factory.get_element_type()
    element = Gst.ElementFactory.make(name, None)
    keys = {"long-name": Gst.ELEMENT_METADATA_LONGNAME, "klass": Gst.ELEMENT_METADATA_KLASS,
            "description": Gst.ELEMENT_METADATA_DESCRIPTION, "author": Gst.ELEMENT_METADATA_AUTHOR}
    properties = {}
    for spec in GObject.list_properties(gtype):
        if spec.owner_type != gtype:
            continue  # BaseTransform's own (name, parent, qos)
        # a pointer property's default is NULL; PyGObject 3.50 (the GPU machine's) gives its spec no default_value
        row = {"type": spec.value_type.name, "nick": spec.nick, "blurb": spec.blurb,
               "flags": int(spec.flags), "default": _jsonable(getattr(spec, "default_value", None)),
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
    obbmeta.gst.register()
    return {name: describe_element(name) for name in obbmeta.gst.ELEMENTS}


RECORDED = json.loads(FIXTURE.read_text()) if FIXTURE.is_file() else {}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_each_element_shows_gstreamer_what_was_recorded(name):
    assert describe_element(name) == RECORDED[name]


def test_the_element_names_known_without_gi_are_the_declared_elements():
    ours = {name: cls for name, cls in obbmeta.gst.element_classes().items() if cls.__module__.startswith("obbmeta.")}
    assert sorted(ours) == sorted(obbmeta.gst.ELEMENTS) == sorted(RECORDED)
    for name in obbmeta.gst.ELEMENTS:
        assert obbmeta.gst.element_factory(name) == (name, Gst.Rank.NONE, ours[name])
        assert Gst.ElementFactory.find(name).get_element_type() == ours[name].__gtype__


def test_the_names_need_no_gi_and_the_bindings_come_initialised_when_asked_for():
    code = ("import sys, obbmeta.gst; names = obbmeta.gst.ELEMENTS; assert 'gi' not in sys.modules, 'gi imported'; "
            "from obbmeta.gst import Gst, GstVideo; assert Gst.is_initialized(); print(*names)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == list(obbmeta.gst.ELEMENTS), r.stderr


def test_element_factory_refuses_a_name_that_is_not_obbmetas():
    with pytest.raises(ValueError, match="name must be one of obbmeta's elements .*got 'nvinfer'"):
        obbmeta.gst.element_factory("nvinfer")


# ---- a user's subclasses
def _letters(value: str) -> str:
    if not value.isalpha():
        raise ValueError("expected letters")
    return value


class GreetingTrack(ObbTrack):
    """A user's obbtrack: one property more (checked like obbmeta's), a hook overridden; no element_name."""
    property_specs = {"greeting": (str, "greeting", "said at start", "hello")}
    _checks = {**ObbTrack._checks, "greeting": _letters}
    started_with: list = []

    def start(self) -> None:
        super().start()
        self.started_with.append((self.prop("greeting"), self.prop("min-hits")))


class DeclaredTrack(ObbTrack):
    """A user's element declared like obbmeta's: obbmeta.gst.register() registers it."""
    element_name = "testdeclaredtrack"
    gtype_name = "GstTestDeclaredTrack"
    long_name = "a user's oriented tracker"
    klass = "Filter/Analyzer/Video"
    description = "obbtrack under another name"


def test_a_users_subclass_keeps_every_property_template_and_the_metadata_of_its_element():
    Gst.Element.register(None, "testgreetingtrack", Gst.Rank.NONE, GreetingTrack)
    factory = Gst.ElementFactory.find("testgreetingtrack")
    sub, base = factory.get_element_type(), ObbTrack.__gtype__
    assert sub.parent == base and sub.name != base.name  # an automatic GType name of its own
    inherited = {p.name: p for p in GObject.list_properties(sub) if p.owner_type == base}
    assert sorted(inherited) == sorted(RECORDED["obbtrack"]["properties"])
    (greeting,) = [p for p in GObject.list_properties(sub) if p.owner_type == sub]
    assert greeting.name == "greeting" and greeting.default_value == "hello"
    assert greeting.flags & GObject.ParamFlags.READWRITE == GObject.ParamFlags.READWRITE
    assert greeting.flags & Gst.PARAM_MUTABLE_PLAYING
    element = Gst.ElementFactory.make("testgreetingtrack", None)
    for name, row in RECORDED["obbtrack"]["properties"].items():
        assert element.get_property(name) == row["value"], name
    assert [t.get_caps().to_string() for t in factory.get_static_pad_templates()] == [
        t["caps"] for t in RECORDED["obbtrack"]["pad-templates"]]
    assert factory.get_metadata(Gst.ELEMENT_METADATA_LONGNAME) == RECORDED["obbtrack"]["metadata"]["long-name"]
    assert GreetingTrack.debug_category is ObbTrack.debug_category  # its messages go to GST_DEBUG=obbtrack


def test_a_users_subclass_runs_with_its_own_property_and_hook():
    Gst.Element.register(None, "testgreetingtrack", Gst.Rank.NONE, GreetingTrack)
    p = Gst.parse_launch("videotestsrc num-buffers=6 ! video/x-raw,format=RGBA,width=160,height=120 "
                         "! obbinfer model=obb_toy_models:toy input-size=96 "
                         "! testgreetingtrack greeting=bonjour min-hits=1 ! fakesink name=s")
    ids = []
    p.get_by_name("s").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, lambda _pad, info: ids.append(
        [i.object_id for f in nvds.BatchMeta.from_gst_buffer(info.get_buffer()).frames
         for i, _ in readback.pairs(f)]) or Gst.PadProbeReturn.OK)
    GreetingTrack.started_with.clear()
    assert run(p).eos
    assert GreetingTrack.started_with == [("bonjour", 1)]
    assert len(ids) == 6 and ids[-1] and nvds.UNTRACKED_OBJECT_ID not in ids[-1]  # tracked by obbtrack's code


def test_a_users_subclass_refuses_a_bad_value_of_its_own_property():
    Gst.Element.register(None, "testgreetingtrack", Gst.Rank.NONE, GreetingTrack)
    p = Gst.parse_launch("videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=64,height=48 "
                         "! testgreetingtrack greeting=42 ! fakesink")
    outcome = run(p, timeout_s=30)
    assert outcome.error and "greeting='42' refused: expected letters" in outcome.error


def test_a_users_declared_element_is_registered_by_register():
    obbmeta.gst.register()
    factory = Gst.ElementFactory.find("testdeclaredtrack")
    assert factory is not None and factory.get_element_type().name == "GstTestDeclaredTrack"
    assert factory.get_metadata(Gst.ELEMENT_METADATA_LONGNAME) == "a user's oriented tracker"
    assert DeclaredTrack.debug_category.name == "testdeclaredtrack"
    assert Gst.ElementFactory.make("testdeclaredtrack", None).get_property("max-age") == 30


@pytest.mark.parametrize("attrs,error,match", [
    ({"element_name": "testnogtype", "long_name": "x", "klass": "Filter", "description": "x"}, TypeError,
     "missing: gtype_name"),
    ({"element_name": "obbtrack", "gtype_name": "GstTestAgain", "long_name": "x", "klass": "Filter",
      "description": "x"}, ValueError, "element_name 'obbtrack' is already declared by obbmeta.gst.track.ObbTrack"),
    ({"element_name": "testsamegtype", "gtype_name": "GstObbTrack", "long_name": "x", "klass": "Filter",
      "description": "x"}, ValueError, "gtype_name 'GstObbTrack' is already a GType"),
    ({"property_specs": {"x": (int, "x", "x", 0, 1, 0)}, "__gproperties__": {}}, TypeError,
     "property_specs or __gproperties__, not both"),
])
def test_a_declaration_that_cannot_work_is_refused_when_the_class_is_made(attrs, error, match):
    with pytest.raises(error, match=match):
        type("Broken", (ObbTrack,), dict(attrs))
    assert "testnogtype" not in obbmeta.gst.element_classes() and "testsamegtype" not in obbmeta.gst.element_classes()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/gst/test_element_declarations.py --write")
    FIXTURE.write_text(json.dumps(describe_all(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")

"""obbmeta.config.nvinfer: nvinfer's key files and YAML configs read as nvinfer reads them (GKeyFile's rules, checked
against GLib's own GKeyFile), typed into obbmeta.config.settings, with errors that say file:line: key:."""
from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obbmeta.config import settings as S
from obbmeta.config.nvinfer import (
    ClassAttrs,
    ConfigError,
    keyfile_bool,
    keyfile_double,
    keyfile_int,
    read_key_file,
    read_nvinfer_config,
)

# A config as deepstream-app users write them (keys from NVIDIA's sample configs), plus obbmeta's own group.
SAMPLE = """\
# comment lines start with '#'
[property]
gpu-id=0
net-scale-factor=0.0039215697906911373
offsets=0;0;0
model-color-format=1
model-engine-file=../../models/resnet.engine
labelfile-path=labels.txt
infer-dims=3;384;640
batch-size = 4
network-mode=2
num-detected-classes=3
interval=1
gie-unique-id=7
process-mode=1
network-type=0
cluster-mode=2
maintain-aspect-ratio=1
symmetric-padding=1
filter-out-class-ids=2;
parse-bbox-func-name=NvDsInferParseCustomYolo
made-up-key=1

[class-attrs-all]
pre-cluster-threshold=0.3
nms-iou-threshold=0.5
topk=20
eps=0.2

[class-attrs-1]
pre-cluster-threshold=0.6
detected-min-w=12
roi-top-offset=8

[obbmeta]
model=obb_toy_models:toy
output-format=yolo-obb
"""


def write(tmp_path, text, name="pgie.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_property_keys_become_typed_settings(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, SAMPLE))
    p = cfg.properties
    assert p["gpu-id"] == 0 and p["unique-id"] == 7 and p["batch-size"] == 4 and p["interval"] == 1
    assert p["input-size"] == (640, 384)  # infer-dims is channels;height;width
    assert p["precision"] == "fp16" and p["model-color-format"] == 1
    assert p["net-scale-factor"] == pytest.approx(1 / 255) and p["offsets"] == (0.0, 0.0, 0.0)
    assert p["maintain-aspect-ratio"] == 1 and p["symmetric-padding"] == 1
    assert p["filter-out-class-ids"] == (2,)  # a trailing ';' ends a GKeyFile list
    assert p["labelfile-path"] == str(tmp_path / "labels.txt")  # relative to the config file, as nvinfer resolves
    assert p["model"] == "obb_toy_models:toy" and p["output-format"] == "yolo-obb"
    assert p["num-detected-classes"] == 3 and p["network-type"] == 0 and p["process-mode"] == 1
    assert p["cluster-mode"] == 2 and p["conf"] == 0.3 and p["iou"] == 0.5


def test_class_groups_fall_back_to_class_attrs_all(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, SAMPLE))
    assert cfg.attrs_for(0) == ClassAttrs(pre_cluster_threshold=0.3, nms_iou_threshold=0.5, topk=20)
    assert cfg.attrs_for(1) == ClassAttrs(pre_cluster_threshold=0.6, nms_iou_threshold=0.5, topk=20,
                                          detected_min_w=12, roi_top_offset=8)


def test_ignored_and_unknown_keys_are_said_with_their_line(tmp_path):
    path = write(tmp_path, SAMPLE)
    cfg = read_nvinfer_config(path)
    lines = SAMPLE.splitlines()

    def line_of(key):
        return next(i for i, t in enumerate(lines, 1) if t.startswith(key))

    for key, where in (("parse-bbox-func-name", cfg.infos), ("made-up-key", cfg.warnings), ("eps", cfg.infos)):
        (w,) = [w for w in where if f": {key}:" in w]
        assert w.startswith(f"{path}:{line_of(key)}: {key}: ")
    assert any("made-up-key" in w and "unknown" in w for w in cfg.warnings)
    assert any("C++ parser" in w for w in cfg.infos)  # the parser's keys: one info line each, no warning


@pytest.mark.parametrize("line,key,message", [
    ("batch-size=four", "batch-size", "expected an integer"),
    ("batch-size=1000000000", "batch-size", "1..1024"),
    ("batch-size=0", "batch-size", "1..1024"),
    ("gie-unique-id=0", "gie-unique-id", "> 0"),
    ("gie-unique-id=99999999999", "gie-unique-id", "32-bit"),
    ("net-scale-factor=nan", "net-scale-factor", "finite"),
    ("net-scale-factor=-1", "net-scale-factor", "0..G_MAXDOUBLE"),
    ("network-mode=4", "network-mode", "INT8"),
    ("model-color-format=5", "model-color-format", "RGB"),
    ("scaling-filter=99", "scaling-filter", "0..6"),
    ("infer-dims=4;384;640", "infer-dims", "channels"),
    ("infer-dims=384;640", "infer-dims", "channels;height;width"),
    ("maintain-aspect-ratio=yes", "maintain-aspect-ratio", "true, false, 1 or 0"),
    ("process-mode=3", "process-mode", "primary"),
    ("operate-on-class-ids=1;x", "operate-on-class-ids", "integer"),
    ("network-type=2", "network-type", "segmentation"),
    ("offsets=1;2;3;4;5", "offsets", "1 to 4"),
    ("interval=-1", "interval", ">= 0"),
])
def test_malformed_or_out_of_range_values_name_file_line_and_key(tmp_path, line, key, message):
    path = write(tmp_path, f"[property]\ngpu-id=0\n{line}\n")
    with pytest.raises(ConfigError) as err:
        read_nvinfer_config(path)
    assert str(err.value).startswith(f"{path}:3: {key}: ") and message in str(err.value)


def test_malformed_class_values_and_groups(tmp_path):
    path = write(tmp_path, "[class-attrs-all]\npre-cluster-threshold=-0.5\n")
    with pytest.raises(ConfigError, match=r":2: pre-cluster-threshold: expected a value >= 0"):
        read_nvinfer_config(path)
    # above 1: no score passes (NVIDIA's samples switch a class off with 1.4), as nvinfer reads it
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ngpu-id=0\n[class-attrs-all]\npre-cluster-threshold=1.4\n"
                                              "[class-attrs-1]\npre-cluster-threshold=1.4\n"))
    assert cfg.values["conf"] == 1.0 and cfg.attrs_for(1).pre_cluster_threshold == 1.4
    with pytest.raises(ConfigError, match=r":1: \[class-attrs-x\]"):
        read_nvinfer_config(write(tmp_path, "[class-attrs-x]\ntopk=1\n"))
    with pytest.raises(ConfigError, match=r":1: \[class-attrs-²\]: .*ASCII digits"):  # strtoull reads ASCII only
        read_nvinfer_config(write(tmp_path, "[class-attrs-²]\ntopk=1\n"))
    with pytest.raises(ConfigError, match=r":3: \[class-attrs-4\]: class 4 but num-detected-classes=2"):
        read_nvinfer_config(write(tmp_path, "[property]\nnum-detected-classes=2\n[class-attrs-4]\ntopk=1\n"))
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ngpu-id=0\n[class-attrs-1x]\ntopk=1\n"))
    assert cfg.attrs_for(1).topk == 1 and any("read as [class-attrs-1]" in w for w in cfg.warnings)


def test_unknown_groups_are_skipped_with_a_warning(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ngpu-id=0\n[propertys]\ngpu-id=3\n"))
    assert cfg.values["gpu-id"] == 0 and any("[propertys]: unknown group, skipped" in w for w in cfg.warnings)


@pytest.mark.parametrize("text,line,message", [
    ("gpu-id=0\n", 1, "before any [group]"),
    ("[property]\njust words\n", 2, "expected key=value"),
    ("[property\n", 1, "group line"),
    ("[property]\n=3\n", 2, "expected key=value"),
    ("\ufeff[property]\ngpu-id=0\n", 1, "byte-order mark"),
    ("[property]   # the element's keys\n", 1, "no inline comments"),
])
def test_lines_that_are_not_key_file_lines(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        read_key_file(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and message in str(err.value)


def test_gkeyfile_rules_whitespace_escapes_duplicates(tmp_path):
    path = write(tmp_path, "[obbmeta]\n  class-names =  a\\sb,c  \nclass-names=x,y\n# model=comment\n")
    assert read_key_file(path) == [("obbmeta", 1, [("class-names", "a\\sb,c  ", 2), ("class-names", "x,y", 3)])]
    cfg = read_nvinfer_config(path)
    assert cfg.properties["class-names"] == "x,y"  # a later duplicate wins, as in GKeyFile
    assert any("given again" in w for w in cfg.warnings)


def test_lines_end_at_newlines_only_as_in_gkeyfile(tmp_path):
    """A form feed or U+2028 is part of a line for GKeyFile (Python's splitlines would split there)."""
    (group,) = read_key_file(write(tmp_path, "[obbmeta]\nclass-names=a\x0cb\u2028c\r\nmodel=x:y\r\n"))
    assert group[2] == [("class-names", "a\x0cb\u2028c", 2), ("model", "x:y", 3)]


@pytest.mark.parametrize("value", ["1_0", "١٢", "²", "0x10", "1.5", "+"])
def test_integers_are_ascii_decimal_as_strtol_reads_them(tmp_path, value):
    with pytest.raises(ConfigError, match=r":2: batch-size: expected an integer"):
        read_nvinfer_config(write(tmp_path, f"[property]\nbatch-size={value}\n"))


def test_an_inline_comment_after_an_integer_is_ignored_as_gkeyfile_does_and_said(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, "[property]\nnetwork-mode=2   # FP16\n"))
    assert cfg.values["precision"] == "fp16"
    assert any(":2: network-mode: " in w and "no inline comments" in w for w in cfg.warnings)


@pytest.mark.parametrize("line,key", [("net-scale-factor=0.5 # half", "net-scale-factor"),
                                      ("maintain-aspect-ratio=1 # keep", "maintain-aspect-ratio")])
def test_an_inline_comment_that_nvinfer_would_misread_is_refused_with_a_hint(tmp_path, line, key):
    with pytest.raises(ConfigError, match=rf":2: {key}: .*inline comment.*lines of their own"):
        read_nvinfer_config(write(tmp_path, f"[property]\n{line}\n"))


def test_a_path_with_an_inline_comment_or_trailing_space_is_refused_with_a_hint(tmp_path):
    (tmp_path / "labels.txt").write_text("car\n")
    with pytest.raises(ConfigError, match=r":2: labelfile-path: 'labels.txt  # the classes' holds an inline comment"):
        read_nvinfer_config(write(tmp_path, "[property]\nlabelfile-path=labels.txt  # the classes\n"))
    with pytest.raises(ConfigError, match=r":2: labelfile-path: 'labels.txt  ' holds trailing whitespace"):
        read_nvinfer_config(write(tmp_path, "[property]\nlabelfile-path=labels.txt  \n"))


def test_paths_in_every_group_resolve_against_the_real_config_folder(tmp_path):
    real = tmp_path / "configs"
    real.mkdir()
    (real / "labels.txt").write_text("car\n")
    (real / "m.pt2").write_bytes(b"")
    write(real, "[property]\nlabelfile-path=labels.txt\nonnx-file=m.onnx\n[obbmeta]\nmodel=./m.pt2\ncharset=cs.txt\n"
                "class-names=car\n", "pgie.txt")
    elsewhere = tmp_path / "links"
    elsewhere.mkdir()
    os.symlink(real / "pgie.txt", elsewhere / "pgie.txt")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        p = read_nvinfer_config(os.path.join("links", "pgie.txt")).properties
    finally:
        os.chdir(cwd)
    assert p["labelfile-path"] == str(real / "labels.txt") and p["onnx-file"] == str(real / "m.onnx")
    assert p["model"] == str(real / "m.pt2") and p["charset"] == str(real / "cs.txt")
    assert p["class-names"] == "car"  # one class name, not a file


def test_the_obbmeta_group_checks_names_and_values(tmp_path):
    with pytest.raises(ConfigError, match=r":2: max-det: "):
        read_nvinfer_config(write(tmp_path, "[obbmeta]\nmax-det=lots\n"))
    with pytest.raises(ConfigError, match=r":2: colour: \[obbmeta\] takes obbinfer's property names"):
        read_nvinfer_config(write(tmp_path, "[obbmeta]\ncolour=red\n"))
    with pytest.raises(ConfigError, match=r":2: unique-id: unique-id must be at most"):
        read_nvinfer_config(write(tmp_path, "[obbmeta]\nunique-id=3000000000\n"))
    got = read_nvinfer_config(write(tmp_path, "[obbmeta]\nmodel=obb_toy_models:toy\ngie-unique-id=4\n"
                                              "infer-on-class-ids=0:2\nnetwork-mode=1\nprocess-mode=secondary\n"))
    assert got.own == {"model": "obb_toy_models:toy", "unique-id": 4, "operate-on-class-ids": (0, 2),
                       "precision": "int8", "process-mode": 2}


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="config-file-path"):
        read_nvinfer_config(str(tmp_path / "nope.txt"))
    p = tmp_path / "latin1.txt"
    p.write_bytes(b"[property]\nlabelfile-path=caf\xe9.txt\n")
    with pytest.raises(ConfigError, match=r":2: not UTF-8"):
        read_nvinfer_config(str(p))


def test_legacy_keys_and_their_precedence(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, "[property]\nuff-input-dims=3;544;960;0\nis-classifier=1\n"
                                              "enable-dbscan=1\nnetwork-input-order=1\n"))
    v = cfg.values
    assert v["input-size"] == (960, 544) and v["network-type"] == 1 and v["cluster-mode"] == 1
    assert v["input-order"] == "nhwc"
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ninfer-dims=3;384;640\nuff-input-dims=3;544;960;0\n"
                                              "network-type=0\nis-classifier=1\n"))
    assert cfg.values["input-size"] == (640, 384) and cfg.values["network-type"] == 0
    assert sum("ignored" in w for w in cfg.warnings) == 2


# ---------------------------------------------------------------- nvinfer's defaults

def test_keys_a_file_leaves_out_take_nvinfers_defaults(tmp_path):
    s = S.resolve({}, read_nvinfer_config(write(tmp_path, "[property]\ngpu-id=0\n")))
    # NvDsInferContext_ResetInitParams / gst_nvinfer_init / the property parser's defaults (DeepStream 8.0 / 9.1)
    assert (s.unique_id, s.batch_size, s.interval, s.process_mode) == (15, 1, 0, 1)
    assert (s.conf, s.iou, s.max_det, s.cluster_mode) == (0.2, 0.3, 0, 0)
    assert s.preprocess == "nvinfer" and s.secondary_reinfer_interval == 2**31 - 1
    assert s.classifier_threshold == 0.0 and s.precision == "fp32" and s.network_type == 0
    assert s.clip_object_outside_roi is True and s.crop_objects_to_roi_boundary is False
    from obbmeta.frames.preprocess import preset

    p = preset(s.preprocess)
    assert (p.keep_ratio, p.center, p.pad_value, p.scale, p.mean, p.channels) == \
        (False, False, 0.0, (1.0,) * 3, (0.0,) * 3, "RGB")


def test_without_a_file_obbinfer_keeps_its_own_defaults():
    s = S.resolve()
    assert (s.conf, s.iou, s.max_det, s.cluster_mode, s.preprocess) == (0.25, 0.45, 300, 2, "ultralytics")
    assert s.unique_id == 15  # nvinfer's property default, also without a file


def test_a_property_beats_the_obbmeta_group_which_beats_nvinfer_keys(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ngie-unique-id=3\nbatch-size=2\n[obbmeta]\n"
                                              "unique-id=4\n"))
    s = S.resolve({"batch-size": 8}, cfg)
    assert s.unique_id == 4 and s.batch_size == 8
    assert s.given >= {"unique-id", "batch-size"} and "conf" not in s.given


def test_the_docs_tables_are_the_ones_in_docs_gst_md():
    from pathlib import Path

    from obbmeta.config.nvinfer import DOCS_END, DOCS_START, docs_tables

    text = (Path(__file__).resolve().parents[1] / "docs" / "gst.md").read_text()
    assert DOCS_START in text and DOCS_END in text, "python -m obbmeta.config.nvinfer --docs writes them"
    assert text.split(DOCS_START)[1].split(DOCS_END)[0].strip() == docs_tables().strip(), \
        "docs/gst.md is out of date: python -m obbmeta.config.nvinfer --docs"


# ---------------------------------------------------------------- the YAML form

YAML = """\
property:
  gpu-id: 0
  net-scale-factor: 0.0039215697906911373
  offsets: 1;2;3       # a list as nvinfer's YAML reader takes it
  infer-dims: [3, 384, 640]
  gie-unique-id: 7
  maintain-aspect-ratio: 1
  labelfile-path: labels.txt
  filter-out-class-ids: 2;3
  parse-bbox-func-name: NvDsInferParseYolo
class-attrs-all:
  pre-cluster-threshold: 0.3
  topk: 20
class-attrs-1:
  nms-iou-threshold: 0.6
source-list:
  list: file:///a.mp4
obbmeta:
  model: obb_toy_models:toy
"""


def test_the_yaml_form_reads_as_the_key_file_form(tmp_path):
    pytest.importorskip("yaml", reason="PyYAML (the yaml extra) is not installed")
    y = read_nvinfer_config(write(tmp_path, YAML, "pgie.yml"))
    k = read_nvinfer_config(write(tmp_path, """\
[property]
gpu-id=0
net-scale-factor=0.0039215697906911373
offsets=1;2;3
infer-dims=3;384;640
gie-unique-id=7
maintain-aspect-ratio=1
labelfile-path=labels.txt
filter-out-class-ids=2;3
parse-bbox-func-name=NvDsInferParseYolo
[class-attrs-all]
pre-cluster-threshold=0.3
topk=20
[class-attrs-1]
nms-iou-threshold=0.6
[obbmeta]
model=obb_toy_models:toy
""", "pgie.txt"))
    assert y.properties == k.properties and dict(y.class_attrs) == dict(k.class_attrs)
    assert y.form == "yaml" and any("[source-list]: unknown group" in w for w in y.warnings)
    assert y.lines["unique-id"] == 6


def test_yaml_errors_name_file_and_line(tmp_path):
    pytest.importorskip("yaml", reason="PyYAML (the yaml extra) is not installed")
    with pytest.raises(ConfigError, match=r"pgie.yml:3: batch-size: expected an integer"):
        read_nvinfer_config(write(tmp_path, "property:\n  gpu-id: 0\n  batch-size: four\n", "pgie.yml"))
    with pytest.raises(ConfigError, match=r"pgie.yml:3: not valid YAML"):
        read_nvinfer_config(write(tmp_path, "property:\n  gpu-id: [0\n", "pgie.yml"))


# ---------------------------------------------------------------- GKeyFile itself as the oracle

GLib = pytest.importorskip("gi.repository.GLib", reason="GLib's Python bindings (gi) are not installed")

_LINE = st.one_of(
    st.sampled_from(["[property]", "[class-attrs-all]", " [obbmeta] ", "[a b]", "[]", "[x]y", "[x] # c", "# c", "",
                     "  # c", "a=1", " a = 1 ", "a=", "=1", "a", "a b=2", "a[x]=1", "[a=1", "k=v\\s", "\ufeffk=v"]),
    st.builds(lambda k, sep, v: f"{k}{sep}{v}", st.sampled_from(["a", "b", "net-scale-factor", " k"]),
              st.sampled_from(["=", " = ", "= "]),
              st.text(alphabet="ab 1.#;\t\x0c\u2028\\", max_size=8)))


def _glib(text):
    kf = GLib.KeyFile()
    try:
        kf.load_from_data(text, len(text.encode()), GLib.KeyFileFlags.NONE)
    except GLib.Error:
        return None
    return {g: {k: kf.get_value(g, k) for k in kf.get_keys(g)[0]} for g in kf.get_groups()[0]}


def _ours(tmp_path, text):
    path = tmp_path / "k.txt"
    path.write_text(text, encoding="utf-8", newline="")
    try:
        groups = read_key_file(str(path))
    except ConfigError:
        return None
    out: dict = {}
    for name, _, entries in groups:
        out.setdefault(name, {}).update({k: v for k, v, _ in entries})
    return out


@settings(max_examples=600, deadline=None)
@given(st.lists(_LINE, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_key_files_read_as_gkeyfile_reads_them(tmp_path_factory, lines, newline):
    text = newline.join(lines) + newline
    assert _ours(tmp_path_factory.mktemp("k"), text) == _glib(text), repr(text)


def _glib_value(getter, text):
    kf = GLib.KeyFile()
    data = f"[g]\nk={text}\n"
    kf.load_from_data(data, len(data.encode()), GLib.KeyFileFlags.NONE)
    try:
        return getattr(kf, getter)("g", "k")
    except GLib.Error:
        return None


_NUMBERISH = st.text(alphabet="0123456789+-.eE xX#a_", min_size=1, max_size=10).filter(lambda t: t.strip() == t
                                                                                       or t.endswith(" "))


@settings(max_examples=400, deadline=None)
@given(_NUMBERISH)
def test_integers_doubles_and_booleans_read_as_gkeyfile_reads_them(text):
    def ours(fn):
        try:
            v = fn(text)
        except ValueError:
            return None
        return v[0] if isinstance(v, tuple) else v

    assert ours(keyfile_int) == _glib_value("get_integer", text), repr(text)
    theirs = _glib_value("get_double", text)
    if theirs is not None and not math.isfinite(theirs):
        theirs = None  # obbmeta refuses NaN and infinities on purpose
    assert ours(keyfile_double) == theirs, repr(text)
    assert ours(keyfile_bool) == _glib_value("get_boolean", text), repr(text)


@pytest.mark.parametrize("text", ["true", "false", "1", "0", "true ", "TRUE", "True", "yes", "1 # c"])
def test_booleans_are_gkeyfiles(text):
    theirs = _glib_value("get_boolean", text)
    try:
        ours = keyfile_bool(text)
    except ValueError:
        ours = None
    assert ours == theirs

"""obbmeta.nvinfer_config: nvinfer's key files read with GKeyFile's rules, errors that say file:line:key."""
from __future__ import annotations

import os

import pytest

from obbmeta.nvinfer_config import (
    ClassAttrs,
    ConfigError,
    parse_bool,
    parse_gpu_id,
    parse_network_mode,
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


def test_property_keys_become_obbinfer_properties(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, SAMPLE))
    p = cfg.properties
    assert p["device"] == "cuda:0" and p["unique-id"] == 7 and p["batch-size"] == 4 and p["interval"] == 1
    assert p["input-size"] == "640x384"  # infer-dims is channels;height;width
    assert p["precision"] == "fp16" and p["model-color-format"] == 1
    assert p["net-scale-factor"] == pytest.approx(1 / 255) and p["offsets"] == "0.0;0.0;0.0"
    assert p["maintain-aspect-ratio"] == 1 and p["symmetric-padding"] == 1
    assert p["filter-out-class-ids"] == "2"  # a trailing ';' ends a GKeyFile list
    assert p["labelfile-path"] == str(tmp_path / "labels.txt")  # relative to the config file, as nvinfer resolves
    assert p["model"] == "obb_toy_models:toy" and p["output-format"] == "yolo-obb"
    assert p["num-detected-classes"] == 3 and p["network-type"] == "detector" and p["process-mode"] == 1
    assert "cluster-mode" not in p


def test_class_groups_fall_back_to_class_attrs_all(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, SAMPLE))
    assert cfg.attrs_for(0) == ClassAttrs(pre_cluster_threshold=0.3, nms_iou_threshold=0.5, topk=20)
    assert cfg.attrs_for(1) == ClassAttrs(pre_cluster_threshold=0.6, nms_iou_threshold=0.5, topk=20,
                                          detected_min_w=12.0, roi_top_offset=8.0)


def test_ignored_and_unknown_keys_warn_with_their_line(tmp_path):
    path = write(tmp_path, SAMPLE)
    warnings = read_nvinfer_config(path).warnings
    lines = SAMPLE.splitlines()

    def line_of(key):
        return next(i for i, t in enumerate(lines, 1) if t.startswith(key))

    for key in ("model-engine-file", "parse-bbox-func-name", "made-up-key", "eps"):
        (w,) = [w for w in warnings if f": {key}:" in w]
        assert w.startswith(f"{path}:{line_of(key)}: {key}: ")
    assert any("made-up-key" in w and "unknown" in w for w in warnings)
    assert any("model-engine-file" in w and "ignored" in w for w in warnings)


@pytest.mark.parametrize("line,key,message", [
    ("batch-size=four", "batch-size", "expected an integer"),
    ("net-scale-factor=nan", "net-scale-factor", "finite"),
    ("network-mode=1", "network-mode", "INT8"),
    ("model-color-format=5", "model-color-format", "RGB"),
    ("infer-dims=4;384;640", "infer-dims", "channels"),
    ("infer-dims=384;640", "infer-dims", "channels;height;width"),
    ("maintain-aspect-ratio=yes", "maintain-aspect-ratio", "0 or 1"),
    ("process-mode=3", "process-mode", "primary"),
    ("operate-on-class-ids=1;x", "operate-on-class-ids", "integer"),
    ("network-type=2", "network-type", "detectors"),
])
def test_malformed_values_name_file_line_and_key(tmp_path, line, key, message):
    path = write(tmp_path, f"[property]\ngpu-id=0\n{line}\n")
    with pytest.raises(ConfigError) as err:
        read_nvinfer_config(path)
    assert str(err.value).startswith(f"{path}:3: {key}: ") and message in str(err.value)


def test_malformed_class_values_and_groups(tmp_path):
    path = write(tmp_path, "[class-attrs-all]\npre-cluster-threshold=1.5\n")
    with pytest.raises(ConfigError, match=r":2: pre-cluster-threshold: expected a number in \[0, 1\]"):
        read_nvinfer_config(path)
    with pytest.raises(ConfigError, match=r":1: \[class-attrs-x\]"):
        read_nvinfer_config(write(tmp_path, "[class-attrs-x]\ntopk=1\n"))
    with pytest.raises(ConfigError, match=r":1: unknown group \[propertys\]"):
        read_nvinfer_config(write(tmp_path, "[propertys]\ngpu-id=0\n"))


@pytest.mark.parametrize("text,line,message", [
    ("gpu-id=0\n", 1, "before any [group]"),
    ("[property]\njust words\n", 2, "expected key=value"),
    ("[property\n", 1, "group line"),
    ("[property]\n=3\n", 2, "expected key=value"),
])
def test_lines_that_are_not_key_file_lines(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        read_key_file(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and message in str(err.value)


def test_gkeyfile_rules_whitespace_escapes_duplicates(tmp_path):
    path = write(tmp_path, "[obbmeta]\n  model =  a\\sb\\\\c  \nmodel=last\n# model=comment\n")
    assert read_key_file(path) == [("obbmeta", 1, [("model", "a b\\c", 2), ("model", "last", 3)])]
    assert read_nvinfer_config(path).properties["model"] == "last"  # a later duplicate wins, as in GKeyFile


def test_obbmeta_group_checks_names_and_values(tmp_path):
    checks = {"model": str, "max-det": int}
    path = write(tmp_path, "[obbmeta]\nmax-det=lots\n")
    with pytest.raises(ConfigError, match=r":2: max-det: "):
        read_nvinfer_config(path, checks)
    with pytest.raises(ConfigError, match=r":2: colour: \[obbmeta\] takes obbinfer's property names"):
        read_nvinfer_config(write(tmp_path, "[obbmeta]\ncolour=red\n"), checks)
    got = read_nvinfer_config(write(tmp_path, "[obbmeta]\nmodel=./m.pt2\n"), checks)
    assert got.properties["model"] == os.path.join(str(tmp_path), "m.pt2")


def test_cluster_mode_none_turns_suppression_off_and_others_warn(tmp_path):
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ncluster-mode=4\n"))
    assert cfg.attrs_for(5).nms_iou_threshold == 1.0
    cfg = read_nvinfer_config(write(tmp_path, "[property]\ncluster-mode=1\n"))
    assert any("cluster-mode" in w and "rotated NMS" in w for w in cfg.warnings)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="config-file-path"):
        read_nvinfer_config(str(tmp_path / "nope.txt"))
    p = tmp_path / "latin1.txt"
    p.write_bytes(b"[property]\nlabelfile-path=caf\xe9.txt\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_nvinfer_config(str(p))


@pytest.mark.parametrize("text,value", [("1", True), ("true", True), ("TRUE", True), ("0", False), ("False", False)])
def test_parse_bool_reads_gkeyfile_booleans(text, value):
    assert parse_bool(text) is value


@pytest.mark.parametrize("text", ["yes", "2", "", " 1"])
def test_parse_bool_refuses_anything_else(text):
    with pytest.raises(ValueError, match="expected 0 or 1"):
        parse_bool(text)


@pytest.mark.parametrize("text,precision", [("0", "fp32"), ("2", "fp16"), ("3", "fp16")])
def test_parse_network_mode_gives_obbinfers_precision(text, precision):
    assert parse_network_mode(text) == precision


@pytest.mark.parametrize("text,match", [("1", "INT8"), ("4", "expected 0 .FP32. or 2 .FP16."), ("fp16", "integer")])
def test_parse_network_mode_refuses_int8_and_unknown_modes(text, match):
    with pytest.raises(ValueError, match=match):
        parse_network_mode(text)


def test_parse_gpu_id_gives_a_cuda_device_and_refuses_a_negative_one():
    assert parse_gpu_id("0") == "cuda:0" and parse_gpu_id("3") == "cuda:3"
    with pytest.raises(ValueError, match=">= 0"):
        parse_gpu_id("-1")

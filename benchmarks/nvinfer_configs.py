"""How many real nvinfer config files obbinfer runs as written: every file in a folder through
``read_nvinfer_config`` and through a pipeline ``videotestsrc ! obbinfer config-file-path=F model=<a toy model>``
to EOS (a secondary config behind a toy primary of the ``operate-on-gie-id`` it names).

The model is overridden (the files name TensorRT engines, ONNX and TAO models this machine does not hold): a toy
detector (any input size, the file's ``num-detected-classes``) or classifier (one head per label-file line); a
label file the folder does not hold is overridden too (``labels-overridden``). The configs are public material
to test against, never committed: point ``--configs`` at a folder of them (e.g. the DeepStream sample apps'
repositories). Results: ``results/nvinfer_configs.json`` (per file: kind, read, ran, and why not).

Usage: PYTHONPATH=. python benchmarks/nvinfer_configs.py --configs DIR [--out results/nvinfer_configs.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from obbmeta.config.nvinfer import ConfigError, read_nvinfer_config
from obbmeta.infer.labels import read_label_file

NUM_CLASSES = [4]
HEADS = [[3]]


class ToyDetector(torch.nn.Module):
    """Any (B, C, H, W) -> a raw YOLO-OBB head with a few boxes from the frame's means."""

    def forward(self, x):
        b, _, h, w = x.shape
        nc = NUM_CLASSES[0]
        k = torch.arange(8, dtype=torch.float32, device=x.device)
        m = x.float().mean((1, 2, 3))[:, None]
        cx, cy = w * (0.2 + 0.6 * ((m * 3.1 + k * 0.137) % 1.0)), h * (0.2 + 0.6 * ((m * 5.3 + k * 0.31) % 1.0))
        bw, bh = torch.full_like(cx, w * 0.1), torch.full_like(cx, h * 0.06)
        scores = torch.zeros(b, nc, 8, device=x.device)
        scores[:, (k.long() % nc), torch.arange(8)] = 0.9
        return torch.cat([cx[:, None], cy[:, None], bw[:, None], bh[:, None], scores, (k * 0.2).expand(b, 8)[:, None]],
                         1)


class ToyClassifier(torch.nn.Module):
    """(K, C, h, w) crops -> one (K, n) head per label-file line."""

    def forward(self, x):
        heads = [x.float().mean((2, 3))[:, :1].expand(-1, n) * torch.arange(1, n + 1, device=x.device)
                 for n in HEADS[0]]
        return heads if len(heads) > 1 else heads[0]


def toy_detector():
    return ToyDetector()


def toy_classifier():
    return ToyClassifier()


def kind_of(cfg) -> str:
    v = cfg.values
    nt = v.get("network-type", 0)
    secondary = v.get("process-mode", 1) == 2
    return {0: "secondary-detector" if secondary else "detector", 1: "classifier", 2: "segmentation",
            3: "instance-segmentation", 100: "other"}.get(nt, f"network-type {nt}")


def run_one(path: Path) -> dict:
    from obbmeta.gst import Gst

    out = {"file": str(path), "read": False, "ran": False}
    try:
        cfg = read_nvinfer_config(str(path))
    except (ConfigError, OSError, ValueError) as exc:
        out["why"] = f"read: {exc}"
        return out
    out["read"], out["kind"] = True, kind_of(cfg)
    labels = cfg.values.get("labelfile-path")
    names = read_label_file(labels) if labels and os.path.isfile(labels) else None
    override = ""
    if labels and names is None:  # the label file belongs to the model, which the folder does not hold either
        out["labels-overridden"] = True
        lf = Path("/tmp/obbmeta_toy_labels.txt")
        lf.write_text("a;b;c;d\n" if out["kind"] == "classifier" else "a\nb\nc\nd\n")
        override = f" labelfile-path={lf}"
        names = read_label_file(str(lf))
    NUM_CLASSES[0] = cfg.values.get("num-detected-classes") or (len(names) if names else 4)
    HEADS[0] = [len(row) for row in names] if names and out["kind"] == "classifier" else [4]
    model = "__main__:toy_classifier" if out["kind"] == "classifier" else "__main__:toy_detector"
    src = "videotestsrc num-buffers=4 pattern=ball ! video/x-raw,format=RGBA,width=320,height=240"
    if cfg.values.get("process-mode", 1) == 2:
        gie = cfg.values.get("operate-on-gie-id", 1)
        gie = gie if gie > 0 else 1
        src += f" ! obbinfer model=__main__:toy_detector unique-id={gie} input-size=320x256 conf=0.1"
    desc = f'{src} ! obbinfer name=i config-file-path="{path}" model={model}{override} ! fakesink'
    p = Gst.parse_launch(desc)
    bus = p.get_bus()
    p.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    if msg is None:
        out["why"] = "run: no EOS within 60 s"
    elif msg.type == Gst.MessageType.ERROR:
        out["why"] = "run: " + msg.parse_error()[0].message
    else:
        out["ran"] = True
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True, help="a folder searched for nvinfer configs (.txt, .yml, .yaml)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "nvinfer_configs.json"))
    args = ap.parse_args()
    import obbmeta.gst

    obbmeta.gst.register()
    files = sorted(p for p in Path(args.configs).rglob("*") if p.suffix in (".txt", ".yml", ".yaml")
                   and p.is_file() and _looks_like_nvinfer(p))
    rows = []
    t0 = time.time()
    for f in files:
        row = run_one(f)
        row["file"] = str(f.relative_to(args.configs))
        if "why" in row:  # no path of this machine in the results
            row["why"] = row["why"].replace(str(Path(args.configs).resolve()) + "/", "<corpus>/").replace(
                str(args.configs).rstrip("/") + "/", "<corpus>/")
        rows.append(row)
        print(("ran " if row["ran"] else "read" if row["read"] else "FAIL"), row.get("kind", "?"), row["file"],
              row.get("why", ""), file=sys.stderr)
    kinds: dict[str, dict] = {}
    for r in rows:
        k = kinds.setdefault(r.get("kind", "unreadable"), {"files": 0, "read": 0, "ran": 0})
        k["files"] += 1
        k["read"] += r["read"]
        k["ran"] += r["ran"]
    summary = {"files": len(rows), "read": sum(r["read"] for r in rows), "ran": sum(r["ran"] for r in rows),
               "by_kind": kinds, "seconds": round(time.time() - t0, 1),
               "date": time.strftime("%Y-%m-%d"), "machine": os.uname().machine, "results": rows}
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}, indent=1))


def _looks_like_nvinfer(p: Path) -> bool:
    text = p.read_text(errors="replace")
    if p.suffix == ".txt":
        return "[property]" in text and any(k in text for k in ("gie-unique-id", "network-type", "labelfile-path",
                                                                  "net-scale-factor", "onnx-file", "model-engine-file"))
    return "property:" in text and any(k in text for k in ("gie-unique-id", "network-type", "net-scale-factor",
                                                             "onnx-file", "model-engine-file"))


if __name__ == "__main__":
    main()

"""A pyservicemaker pipeline with obbmeta: obbinfer (your PyTorch OBB model) -> nvtracker -> obboverlay ->
obbmessage -> nvdsosd, with nvmsgconv/nvmsgbroker publishing each frame's rotated boxes.

Written for DeepStream 8.0 and 9.x (pyservicemaker with Python 3.12; 7.1's alpha pyservicemaker has the same
Pipeline calls, unverified). It could not run on obbmeta's development machines (no nvstreammux, nvtracker,
nvmsgconv there); the elements and operators it uses are tested on real GStreamer pipelines and on a
pyservicemaker stand-in over NVIDIA's real metadata library (tests/gst, tests/servicemaker).

    python examples/servicemaker_pipeline.py file:///path/video.mp4 mypkg.models:build labels.txt [mqtt-conn-str]
"""
import os
import sys

from pyservicemaker import Pipeline, Probe

from obbmeta import servicemaker

DS = "/opt/nvidia/deepstream/deepstream"


def main(uri: str, model: str, labels: str, broker: str | None = None) -> None:
    p = Pipeline("obbmeta")
    p.add("nvurisrcbin", "src", {"uri": uri})
    mux = {"batch-size": 1}
    if os.environ.get("USE_NEW_NVSTREAMMUX", "").lower() == "no":  # the legacy mux scales to a size of its own;
        mux.update({"width": 1920, "height": 1080})                 # the new one has no width / height
    p.add("nvstreammux", "mux", mux)
    p.add("nvvideoconvert", "conv")
    p.add("capsfilter", "rgba", {"caps": "video/x-raw(memory:NVMM), format=RGBA"})
    servicemaker.add_obbinfer(p, "infer", {"model": model, "input-size": 1024, "class-names": labels,
                                           "device": "cuda"})
    p.add("nvtracker", "tracker", {"ll-lib-file": f"{DS}/lib/libnvds_nvmultiobjecttracker.so"})
    p.add("obboverlay", "overlay", {"mode": "meta"})       # OBB edges as nvdsosd lines (any DeepStream version)
    p.add("obbmessage", "message")      # per-frame NVDS_CUSTOM_MSG_BLOB with the rotated boxes (msg2p-newapi=1);
    #                                     payload=event: NvDsEventMsgMeta per object, box in objSignature (newapi=0)
    p.add("nvdsosd", "osd")
    if broker:
        p.add("tee", "tee")
        p.add("queue", "q1")
        p.add("queue", "q2")
        msgconv_config = f"{DS}/sources/apps/sample_apps/deepstream-test4/dstest4_msgconv_config.yml"
        p.add("nvmsgconv", "msgconv", {"config": msgconv_config, "msg2p-newapi": 1, "frame-interval": 1})
        p.add("nvmsgbroker", "msgbroker", {"proto-lib": f"{DS}/lib/libnvds_mqtt_proto.so", "conn-str": broker,
                                            "topic": "obbmeta"})
        p.add("fakesink", "sink")
        p.link(("src", "mux"), ("", "sink_%u")).link("mux", "conv", "rgba", "infer", "tracker", "overlay", "message",
                                                        "tee")
        p.link("tee", "q1", "msgconv", "msgbroker")
        p.link("tee", "q2", "osd", "sink")
    else:
        p.add("fakesink", "sink")
        p.link(("src", "mux"), ("", "sink_%u")).link("mux", "conv", "rgba", "infer", "tracker", "overlay", "message",
                                                        "osd", "sink")
    # A pure-pyservicemaker probe too: DS 9 objects carrying rect_params.rotation_angle drawn as lines.
    p.attach("osd", Probe("obb-overlay", servicemaker.ObbOverlayOperator()))
    p.start().wait()


if __name__ == "__main__":
    main(*sys.argv[1:])

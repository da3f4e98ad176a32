"""``obbmessage`` for the gst-python plugin loader: GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)."""
import _obbmeta_site

try:
    from obbmeta.gst._gi import Gst
    from obbmeta.gst.message import ObbMessage
except ImportError as exc:
    raise ImportError(f"obbmeta's obbmessage element cannot load: {exc}; {_obbmeta_site.HINT}") from exc

__gstelementfactory__ = ("obbmessage", Gst.Rank.NONE, ObbMessage)

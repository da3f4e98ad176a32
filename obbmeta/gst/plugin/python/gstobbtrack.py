"""``obbtrack`` for the gst-python plugin loader: GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)."""
import _obbmeta_site

try:
    from obbmeta.gst._gi import Gst
    from obbmeta.gst.track import ObbTrack
except ImportError as exc:
    raise ImportError(f"obbmeta's obbtrack element cannot load: {exc}; {_obbmeta_site.HINT}") from exc

__gstelementfactory__ = ("obbtrack", Gst.Rank.NONE, ObbTrack)

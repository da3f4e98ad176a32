"""``obboverlay`` for the gst-python plugin loader: GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)."""
import _obbmeta_site

__gstelementfactory__ = _obbmeta_site.element_factory("obboverlay")

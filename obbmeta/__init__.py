"""obbmeta: oriented boxes as first-class NVIDIA DeepStream metadata."""
__version__ = "0.1.0"

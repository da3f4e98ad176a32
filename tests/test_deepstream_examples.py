"""The examples for DeepStream machines (they cannot run here): they compile and say which versions they were
written for."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name,versions", [("servicemaker_pipeline.py", ("8.0", "9.x")),
                                           ("pyds_probe.py", ("7.1", "8.0"))])
def test_deepstream_examples_compile_and_name_their_versions(name, versions):
    text = (ROOT / "examples" / name).read_text()
    compile(text, name, "exec")
    assert "Written for DeepStream" in text and all(v in text for v in versions)

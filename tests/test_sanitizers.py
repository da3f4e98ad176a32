"""The C core under AddressSanitizer + UndefinedBehaviorSanitizer and valgrind memcheck: tests/sanitize/run.sh
fuzzes every exported C entry point (geometry, drawing, and the DeepStream writers/readers on NVIDIA's real
libnvds_meta) and must come back clean; its self-test proves the sanitizers would have caught the old
float-to-uint32 overflow. Skipped when the tools are not installed."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

RUN = Path(__file__).parent / "sanitize" / "run.sh"


def _sanitizers_work() -> bool:
    if shutil.which("gcc") is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.c"
        src.write_text("int main(void) { return 0; }\n")
        return subprocess.run(["gcc", "-fsanitize=address,undefined", str(src), "-o", str(Path(tmp) / "t")],
                              capture_output=True).returncode == 0


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _sanitizers_work(), reason="gcc with ASan/UBSan not installed")]


def nvds_library() -> str:
    from obbmeta import nvds
    from obbmeta.nvds import _library

    return str(_library.load().meta_path) if nvds.available() else ""


def test_fuzzing_every_c_entry_point_is_clean_under_asan_ubsan_and_valgrind():
    lib = nvds_library()
    result = subprocess.run(["bash", str(RUN), lib, "7", "3000", "150"], capture_output=True, text=True, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert "fuzz OK: 3000 iterations" in out and "sanitize: clean" in out
    if lib:
        assert "DeepStream metadata" in out
    if shutil.which("valgrind"):
        assert "ERROR SUMMARY: 0 errors" in out and "definitely lost: 0 bytes" in out


def test_the_sanitizer_build_catches_an_out_of_range_float_to_uint32_cast():
    result = subprocess.run(["bash", str(RUN), "--selftest"], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "is outside the range of representable values of type 'unsigned int'" in result.stderr

"""valgrind memcheck over the harness (tests/nvds/valgrind/): NVIDIA's libnvds_meta + obbmeta's C writer free
everything they allocate and never touch invalid memory; and the check really catches a forgotten batch."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).parent / "valgrind" / "run.sh"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")]


def run(*harness_args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUN), sys.executable, *harness_args], capture_output=True, text=True,
                          timeout=300)


def test_write_copy_read_release_is_clean_under_valgrind():
    result = run()
    assert "harness OK" in result.stdout, result.stdout + result.stderr
    assert "check_log: 0 problem(s)" in result.stdout, result.stdout
    assert "ERROR SUMMARY: 0 errors" in result.stdout
    assert result.returncode == 0, result.stdout


def test_the_valgrind_check_catches_a_batch_that_is_never_released():
    result = run("--leak-one-batch")
    assert result.returncode != 0
    assert "check_log: 0 problem(s)" not in result.stdout

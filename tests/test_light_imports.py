"""The metadata side imports without torch (a DeepStream probe or a gst-python plugin should not pay for it)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["obbmeta", "obbmeta.nvds", "obbmeta.nvds.display", "obbmeta.nvds.messages",
                                    "obbmeta.palette", "obbmeta._validators"])
def test_module_imports_without_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch imported'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr

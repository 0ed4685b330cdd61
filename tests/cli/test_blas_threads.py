"""khive's composition root pins BLAS to one thread before numpy loads, unless the user chose a count."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, sys
from khive.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"),
      "numpy" in sys.modules)
"""


def test_cli_pins_blas_threads_but_keeps_the_users_choice() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["MKL_NUM_THREADS"] = "4"
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    # numpy must not be loaded yet when the variables are set, or OpenBLAS would ignore them.
    assert out[-4:] == ["1", "1", "4", "False"]

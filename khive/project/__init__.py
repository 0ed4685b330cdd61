"""The khive project: its directory, ``khive.yaml`` and state under ``.khive/``."""

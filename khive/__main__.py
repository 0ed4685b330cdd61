"""``python -m khive``: the same as the ``khive`` script."""

from khive.cli.app import main

raise SystemExit(main())

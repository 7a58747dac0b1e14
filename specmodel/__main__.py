"""``python -m specmodel`` runs the specmodel command line (:func:`cli.main.main`).

The CLI (typer; rich for progress bars) is imported here only, never by ``import specmodel``.
"""

from cli.main import main

raise SystemExit(main())

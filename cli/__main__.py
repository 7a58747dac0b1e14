"""``python -m cli`` runs the specmodel command line."""

from cli.main import main

raise SystemExit(main())

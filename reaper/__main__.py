"""`python -m reaper ...` is `reaper ...`."""

from reaper.interfaces.cli import main

raise SystemExit(main())

"""`python -m reaper ...` is `reaper ...`, and the `reaper` command's entry point.

Ctrl-C can come at any moment, the first second included, while the command's modules are
still being imported: so the entry point catches it around the imports too (even `sys` is
imported inside the `try`), and says `reaper: interrupted` with exit status 130 (128 + SIGINT,
what a shell reports) instead of a traceback.
"""

INTERRUPTED = 130


def run() -> int:
    try:
        from reaper.interfaces.cli import main

        return main()
    except KeyboardInterrupt:
        import sys

        print("reaper: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(run())

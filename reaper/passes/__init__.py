"""What lists, writes or sends: every pass, run through one `Context`.

Each pass observes (one listing of every account, `observe`), decides with the pure core, and
applies what it decided through the context's `Effects` — which, in a dry run, record instead
of acting: a dry run is a way of running a pass, not a branch in every step.
"""

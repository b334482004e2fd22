"""reaper: the guard outside rented GPU instances."""

__version__ = "0.1.0"

# Sent on every provider and channel request: one client measured a 403 from a provider for a
# default library agent, and an agent that names the tool is what API operators ask for.
USER_AGENT = f"reaper/{__version__}"

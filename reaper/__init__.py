"""reaper: the guard outside rented GPU instances."""

__version__ = "0.1.0"

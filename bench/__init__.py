"""Benchmarks: speed and memory are measured here, not in timed tests (`make bench`)."""

"""Benchmarks and benchmark-data generators for advisor (not shipped in the wheel)."""

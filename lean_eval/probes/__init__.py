"""Sandbox and environment probes: synthetic submissions scored through the real driver."""

"""Renderers of benchmarks/README.md, one registry keyed by result kind (registry.py)."""

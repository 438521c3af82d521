"""Kernel Workbench: interactive, reviewable GPU kernel tuning."""

__version__ = "0.1.0"

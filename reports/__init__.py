"""Figures and tables rendered from result files (never from the library's objects)."""

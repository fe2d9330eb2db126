"""Models with known posteriors (for checking samplers) and the paper's benchmark models."""

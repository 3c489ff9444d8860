"""Command-line tools: ``pgascol`` (info, calibrate, the zero-code runner) and
``pgascol-bench``."""

"""pgascol's version: the one place it is written. pyproject.toml reads it
(tool.setuptools.dynamic), pgascol.__version__ and `pgascol info` report it,
and the calibration file is keyed by it. CHANGELOG.md's newest entry names it."""
__version__ = "0.1.0"

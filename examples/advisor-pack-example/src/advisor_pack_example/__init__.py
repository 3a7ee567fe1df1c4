"""An advisor rule pack shipped as a Python package: this folder is the pack (pack.yaml + rules)."""

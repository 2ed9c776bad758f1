"""Files the harness reads and writes itself: atomic writes, strict JSON and TOML decoding, path
containment. Imports nothing of the package but ``lean_eval.errors``."""

"""The report formats, named once: ``report --format`` offers exactly these. Nothing is imported
here, so the command line builds its ``--help`` from this list without loading a renderer
(``formats`` maps each name to its renderer; a test checks it covers every one)."""

from __future__ import annotations

from typing import Literal, get_args

Format = Literal["table", "markdown", "junit", "json", "csv", "html"]
FORMATS: tuple[Format, ...] = get_args(Format)

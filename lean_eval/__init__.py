"""lean-eval: score untrusted Lean 4 proofs against a trusted benchmark inside bubblewrap."""

__version__ = "0.1.0"

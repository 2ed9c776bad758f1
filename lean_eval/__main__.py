"""``python -m lean_eval`` runs the command line."""

from lean_eval.cli import main

main(prog_name="lean-eval")

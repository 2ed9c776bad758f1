/-!
# Problem `double_def`: trusted challenge

A definition hole and a theorem about it. Any definition of `double` is accepted (its value is
free, but it is kernel- and axiom-checked) as long as `double_eq` is proved about it. This file
is trusted: scoring copies it from the benchmark revision and never from a submission.
-/

/-- Hole (definition): doubling a natural number. -/
def double (n : Nat) : Nat := sorry

/-- Hole (theorem): `double` doubles. -/
theorem double_eq (n : Nat) : double n = n + n := by sorry

import ChallengeDeps

/-!
# Problem `multi_hole`: trusted challenge

Five holes of three kinds: a definition (`triple`), two theorems about it, an instance
(`instHasBaseCounter`) and a theorem about that instance. The last theorem names the instance
explicitly, so its statement means the same constant wherever it is elaborated, including in
the bridge, where the submitted instance is also in scope. This file is trusted: scoring copies
it from the benchmark revision and never from a submission.
-/

/-- Hole (definition): three times a natural number. -/
def triple (n : Nat) : Nat := sorry

/-- Hole (theorem): `triple` adds a number to itself three times. -/
theorem triple_eq (n : Nat) : triple n = n + n + n := by sorry

/-- Hole (theorem): `triple` is additive. -/
theorem triple_add (m n : Nat) : triple (m + n) = triple m + triple n := by sorry

/-- Hole (instance): the base point of `Counter`. -/
instance instHasBaseCounter : HasBase Counter := sorry

/-- Hole (theorem): the base counter holds zero. -/
theorem base_value : (@HasBase.base Counter instHasBaseCounter).value = 0 := by sorry

/-!
# Problem `add_comm_explicit`: trusted challenge

The statement scored for this problem. This file is trusted: scoring copies it from the
benchmark revision and never from a submission.
-/

/-- Hole (theorem): addition of natural numbers is commutative (explicit arguments). -/
theorem add_comm_explicit (a b : Nat) : a + b = b + a := by sorry

/-!
# Problem `two_plus_two`: trusted challenge

The statement scored for this problem. This file is trusted: scoring copies it from the
benchmark revision and never from a submission.
-/

/-- Hole (theorem): two plus two is four, in `Nat`. -/
theorem two_plus_two : 2 + 2 = 4 := by sorry

/-!
# Problem `multi_hole`: trusted support declarations

Imported by `Challenge.lean`, `Solution.lean` and the submission, so that all three talk about
the same class and type. This file is trusted: scoring copies it from the benchmark revision
and never from a submission.
-/

/-- Types with a distinguished base point. -/
class HasBase (α : Type) where
  /-- The distinguished base point. -/
  base : α

/-- A counter holding a natural number. -/
structure Counter where
  /-- The current value of the counter. -/
  value : Nat

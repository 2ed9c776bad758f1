/-!
# Problem `widget_instance`: trusted support declarations

Imported by `Challenge.lean`, `Solution.lean` and the submission, so that all three talk about
the same `Widget` type. This file is trusted: scoring copies it from the benchmark revision and
never from a submission.
-/

/-- A widget, which only has a size. -/
structure Widget where
  /-- The size of the widget. -/
  size : Nat

import Submission

/-!
# Problem `add_comm_explicit`: trusted bridge

Restates each hole of `Challenge.lean` word for word and proves it with the submitted
declaration `Submission.<name>`, applied to the explicit arguments. `lake comparator` builds
this module inside its sandbox and compares its constants with the challenge's.
-/

theorem add_comm_explicit (a b : Nat) : a + b = b + a := by exact Submission.add_comm_explicit a b

import Submission

/-!
# Problem `double_def`: trusted bridge

Restates each hole of `Challenge.lean` word for word and delegates it to the submitted
declaration `Submission.<name>`. The definition bridge is `@[reducible]`, so the theorem
bridge's `exact` sees through `double` to `Submission.double`. `lake comparator` builds this
module inside its sandbox and compares its constants with the challenge's.
-/

@[reducible] noncomputable def double (n : Nat) : Nat := Submission.double n

theorem double_eq (n : Nat) : double n = n + n := by exact Submission.double_eq n

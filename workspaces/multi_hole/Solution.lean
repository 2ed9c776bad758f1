import ChallengeDeps
import Submission

/-!
# Problem `multi_hole`: trusted bridge

Restates each hole of `Challenge.lean` word for word and delegates it to the submitted
declaration `Submission.<name>`. The definition and instance bridges are `@[reducible]`, so
the `exact` of each theorem bridge sees through them to the submitted constants.
`lake comparator` builds this module inside its sandbox and compares its constants with the
challenge's.
-/

@[reducible] noncomputable def triple (n : Nat) : Nat := Submission.triple n

theorem triple_eq (n : Nat) : triple n = n + n + n := by exact Submission.triple_eq n

theorem triple_add (m n : Nat) : triple (m + n) = triple m + triple n := by
  exact Submission.triple_add m n

@[reducible] noncomputable instance instHasBaseCounter : HasBase Counter := Submission.instHasBaseCounter

theorem base_value : (@HasBase.base Counter instHasBaseCounter).value = 0 := by
  exact Submission.base_value

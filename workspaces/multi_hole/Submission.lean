import ChallengeDeps
import Submission.Helpers

/-!
# Problem `multi_hole`: your submission

Fill in all five holes. Keep every name and statement exactly as written: the text between the
name and `:=` must match `Challenge.lean`, and every declaration must stay inside
`namespace Submission` (where `triple` and `instHasBaseCounter` mean `Submission.triple` and
`Submission.instHasBaseCounter`). `HasBase` and `Counter` come from the trusted `ChallengeDeps`
module. Helper lemmas may go in between or in `Submission/Helpers.lean`.
-/

namespace Submission

def triple (n : Nat) : Nat := sorry

theorem triple_eq (n : Nat) : triple n = n + n + n := by sorry

theorem triple_add (m n : Nat) : triple (m + n) = triple m + triple n := by sorry

instance instHasBaseCounter : HasBase Counter := sorry

theorem base_value : (@HasBase.base Counter instHasBaseCounter).value = 0 := by sorry

end Submission

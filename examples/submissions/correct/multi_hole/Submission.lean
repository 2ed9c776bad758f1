import ChallengeDeps
import Submission.Helpers

/-!
Known-good submission for `multi_hole`: expected verdict `accepted`.
It also exercises a helper module (`Submission/Helpers.lean`) and a multi-line tactic proof.
-/

namespace Submission

def triple (n : Nat) : Nat := n + n + n

theorem triple_eq (n : Nat) : triple n = n + n + n := rfl

theorem triple_add (m n : Nat) : triple (m + n) = triple m + triple n := by
  rw [triple_eq, triple_eq, triple_eq]
  exact add_three_copies m n

instance instHasBaseCounter : HasBase Counter := ⟨{ value := 0 }⟩

theorem base_value : (@HasBase.base Counter instHasBaseCounter).value = 0 := rfl

end Submission

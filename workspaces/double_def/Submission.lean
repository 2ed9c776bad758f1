import Submission.Helpers

/-!
# Problem `double_def`: your submission

Give `double` a definition and prove `double_eq` about it. Keep both names and statements
exactly as written: the text between the name and `:=` must match `Challenge.lean`, and both
declarations must stay inside `namespace Submission` (where `double` means
`Submission.double`). Helper lemmas may go in between or in `Submission/Helpers.lean`.
-/

namespace Submission

def double (n : Nat) : Nat := sorry

theorem double_eq (n : Nat) : double n = n + n := by sorry

end Submission

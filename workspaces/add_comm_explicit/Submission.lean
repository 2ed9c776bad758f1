import Submission.Helpers

/-!
# Problem `add_comm_explicit`: your submission

Replace the placeholder proof below. Keep the hole's name, binders and statement exactly as
written: the text between the name and `:=` must match `Challenge.lean`, and the declaration
must stay inside `namespace Submission`. Helper lemmas may go above it or in
`Submission/Helpers.lean`.
-/

namespace Submission

theorem add_comm_explicit (a b : Nat) : a + b = b + a := by sorry

end Submission

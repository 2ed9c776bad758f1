/-!
Deliberately incorrect submission for `two_plus_two`: the statement is right but the proof is
a placeholder, so the solution depends on `sorryAx`.
Expected verdict: `rejected`, reason `illegal_axiom` (comparator: Illegal axiom detected: 'sorryAx').
-/

namespace Submission

theorem two_plus_two : 2 + 2 = 4 := by sorry

end Submission

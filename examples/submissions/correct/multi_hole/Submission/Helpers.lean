/-! Helper module of the known-good `multi_hole` submission. -/

namespace Submission

/-- Regroup three copies of a sum into three copies of each summand. -/
theorem add_three_copies (m n : Nat) :
    m + n + (m + n) + (m + n) = m + m + m + (n + n + n) := by
  omega

end Submission

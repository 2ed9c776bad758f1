/-! Known-good submission for `double_def`: expected verdict `accepted`. -/

namespace Submission

def double (n : Nat) : Nat := n + n

theorem double_eq (n : Nat) : double n = n + n := rfl

end Submission

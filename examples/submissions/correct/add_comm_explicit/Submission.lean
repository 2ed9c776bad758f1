/-! Known-good submission for `add_comm_explicit`: expected verdict `accepted`. -/

namespace Submission

theorem add_comm_explicit (a b : Nat) : a + b = b + a := Nat.add_comm a b

end Submission

/-! Known-good submission for `two_plus_two`: expected verdict `accepted`. -/

namespace Submission

theorem two_plus_two : 2 + 2 = 4 := by decide

end Submission

/-!
Deliberately incorrect submission for `add_comm_explicit`: it proves a weaker statement
(`a + b = a + b`) than the challenge's (`a + b = b + a`).
Expected verdict: `rejected`. See ../../README.md for the reason code on each toolchain.
-/

namespace Submission

theorem add_comm_explicit (a b : Nat) : a + b = a + b := rfl

end Submission

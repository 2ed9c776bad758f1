import Submission

/-!
# Problem `two_plus_two`: trusted bridge

Restates each hole of `Challenge.lean` word for word and proves it with the submitted
declaration `Submission.<name>`. `lake comparator` builds this module inside its sandbox and
compares its constants with the challenge's.
-/

theorem two_plus_two : 2 + 2 = 4 := by exact Submission.two_plus_two

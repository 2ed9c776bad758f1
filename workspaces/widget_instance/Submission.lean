import ChallengeDeps
import Submission.Helpers

/-!
# Problem `widget_instance`: your submission

Provide the instance and prove the theorem about it. Keep both names and statements exactly as
written: the text between the name and `:=` must match `Challenge.lean`, and both declarations
must stay inside `namespace Submission` (where `instInhabitedWidget` means
`Submission.instInhabitedWidget`). `Widget` comes from the trusted `ChallengeDeps` module.
-/

namespace Submission

instance instInhabitedWidget : Inhabited Widget := sorry

theorem default_widget_size : (@Inhabited.default Widget instInhabitedWidget).size = 1 := by sorry

end Submission

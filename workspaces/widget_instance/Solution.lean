import ChallengeDeps
import Submission

/-!
# Problem `widget_instance`: trusted bridge

Restates each hole of `Challenge.lean` word for word and delegates it to the submitted
declaration `Submission.<name>`. The instance bridge is `@[reducible]`, so the theorem
bridge's `exact` sees through `instInhabitedWidget` to `Submission.instInhabitedWidget`.
`lake comparator` builds this module inside its sandbox and compares its constants with the
challenge's.
-/

@[reducible] noncomputable instance instInhabitedWidget : Inhabited Widget := Submission.instInhabitedWidget

theorem default_widget_size : (@Inhabited.default Widget instInhabitedWidget).size = 1 := by
  exact Submission.default_widget_size

import ChallengeDeps

/-! Known-good submission for `widget_instance`: expected verdict `accepted`. -/

namespace Submission

instance instInhabitedWidget : Inhabited Widget := ⟨{ size := 1 }⟩

theorem default_widget_size : (@Inhabited.default Widget instInhabitedWidget).size = 1 := rfl

end Submission

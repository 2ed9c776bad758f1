import ChallengeDeps

/-!
# Problem `widget_instance`: trusted challenge

A named instance hole and a theorem that pins down its default widget. The theorem names
the instance explicitly (`@Inhabited.default Widget instInhabitedWidget`), so its statement
means the same constant wherever it is elaborated, including in the bridge, where the
submitted instance is also in scope. This file is trusted: scoring copies it from the
benchmark revision and never from a submission.
-/

/-- Hole (instance): a default widget. -/
instance instInhabitedWidget : Inhabited Widget := sorry

/-- Hole (theorem): the default widget has size one. -/
theorem default_widget_size : (@Inhabited.default Widget instInhabitedWidget).size = 1 := by sorry

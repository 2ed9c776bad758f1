/-!
# Helpers for your submission (optional)

Put auxiliary definitions and lemmas here, inside `namespace Submission`, and use them from
`Submission.lean`, which imports this module. More modules under `Submission/` are allowed too;
import them from `Submission.lean`. Only `Submission.lean` and `.lean` files under `Submission/`
are taken from a submission.
-/

namespace Submission

end Submission

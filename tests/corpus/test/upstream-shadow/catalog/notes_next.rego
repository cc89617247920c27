package tools.notes_next

import rego.v1

# The rollout: drafts may be deleted, everything else is kept.
deny contains "only drafts may be deleted" if not startswith(input.arguments.path, "drafts/")

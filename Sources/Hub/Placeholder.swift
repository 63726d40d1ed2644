// Placeholder until the target is filled.

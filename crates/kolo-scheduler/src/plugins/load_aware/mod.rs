//! LoadAwareScheduling (spec §1): placeholder, filled in by its own change.

//! NodeNUMAResource (spec §6): placeholder, filled in by its own change.

//! The PodMigrationJob controller (spec §10) (being written).

//! Custom resource types (SKELETON; filled in by the CRD work).

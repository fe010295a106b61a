//! Pod validation. (Skeleton: filled in by the validation work.)

use super::{PodAdmission, ValidateOutcome};

/// Validates a pod being admitted.
pub fn validate_pod(_request: &PodAdmission) -> ValidateOutcome {
    ValidateOutcome::Allowed
}

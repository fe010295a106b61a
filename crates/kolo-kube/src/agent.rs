//! The node agent's cluster side (to be written).

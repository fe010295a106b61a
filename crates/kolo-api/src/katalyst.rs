//! Katalyst QoS levels.

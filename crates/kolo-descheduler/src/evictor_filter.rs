//! Which pods the descheduler may evict at all (being written).

//! The admission webhook HTTPS server. (Skeleton: filled in by the server work.)

//! # kolo-runtime-proxy
//!
//! A CRI proxy (see [`cri`]).

pub mod cri;
pub mod frame;
pub mod method;
pub mod translate;
pub mod hook_client;
pub mod server;
pub mod stats;
pub mod upstream;
pub mod listen;
pub mod testing;
pub mod bench;
pub mod authority;

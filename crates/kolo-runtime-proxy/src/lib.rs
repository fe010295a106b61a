//! # kolo-runtime-proxy
//!
//! `kolo runtime-proxy`: a CRI proxy between the kubelet and the container
//! runtime that calls the node agent's hooks, so a container starts with
//! kolo's cpuset and limits already in place (`docs/runtime-proxy.md`).
//!
//! * [`server`]: the proxy — HTTP/2 forwarding, hooks around the calls
//!   [`method`] names;
//! * [`translate`]: CRI messages to hook requests, hook answers to patches
//!   appended to the kubelet's message ([`frame`]: gRPC framing);
//! * [`hook_client`]: the hook server's client, timeout and failure policy
//!   (the protocol is `kolo_api::runtime_hook`);
//! * [`upstream`]: the runtime's socket; [`listen`]: the proxy's;
//!   [`authority`]: old gRPC-Go clients' `:authority`;
//! * [`cri`]: the CRI protos (`v1alpha2`, `v1`) and a client channel;
//!   [`testing`] and [`bench`]: driving pods through an endpoint.

pub mod authority;
pub mod bench;
pub mod cri;
pub mod frame;
pub mod hook_client;
pub mod listen;
pub mod method;
pub mod server;
pub mod stats;
pub mod testing;
pub mod translate;
pub mod upstream;

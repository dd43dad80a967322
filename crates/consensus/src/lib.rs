//! Viewstamped Replication replica core (sans-IO).
//!
//! `client_table` is the client-sessions table every write path consults
//! before executing (register, dedupe retries, cached replies); `types`
//! holds the newtypes both speak in; `vsr` is Viewstamped Replication of
//! a group of `n` (normal operation, view change, recovery), which the
//! simulator drives; a single node runs each group as a group of one.
//! `wire` is the byte
//! encoding of `vsr` messages between replicas (replication spec §3).
#![forbid(unsafe_code)]

pub mod client_table;
pub mod types;
pub mod vsr;
pub mod wire;

pub use types::{ClientId, Op, Quorums, RequestNumber, Session, View};

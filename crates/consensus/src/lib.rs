//! Viewstamped Replication replica core (sans-IO).
//!
//! `replica` is a group's commit path on its primary (op numbering,
//! timestamps, the pipeline, the commit rule over acknowledgements);
//! `client_table` is the client-sessions table every write path consults
//! before executing (register, dedupe retries, cached replies); `types`
//! holds the newtypes both speak in; `vsr` is Viewstamped Replication of
//! a group of `n` (normal operation, view change, recovery), which the
//! simulator drives. On a single node each group is a group of one whose
//! only acknowledgement is its own journal write. `wire` is the byte
//! encoding of `vsr` messages between replicas (replication spec §3).
#![forbid(unsafe_code)]

pub mod client_table;
pub mod replica;
pub mod types;
pub mod vsr;
pub mod wire;

pub use replica::{Durability, GroupConfig, Prepared, Recovered, Refusal, Replica};
pub use types::{ClientId, Op, Quorums, RequestNumber, Session, View};

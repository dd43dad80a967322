//! Viewstamped Replication replica core (sans-IO).
//!
//! What exists so far: the client-sessions table that every write path
//! consults before executing (register, dedupe retries, cached replies). The
//! prepare/commit pipeline and view change build on it later; on a single
//! node the primary commits as soon as its own journal has the operation.

pub mod client_table;

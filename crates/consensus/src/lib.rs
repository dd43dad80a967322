//! Viewstamped Replication replica core (sans-IO): client sessions table, prepare/commit pipeline.

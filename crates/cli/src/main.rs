//! The `iggy` command-line client. Not built yet: it says so and exits non-zero.

fn main() {
    eprintln!("iggy CLI: not available in this build yet; use the Rust SDK or the HTTP API");
    std::process::exit(2);
}

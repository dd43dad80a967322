//! `iggy-bench`. Not built yet: it says so and exits non-zero.

fn main() {
    eprintln!("iggy-bench: not available in this build yet");
    std::process::exit(2);
}

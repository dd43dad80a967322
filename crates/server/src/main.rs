//! iggy-server entry point.

fn main() {
    println!("iggy-server");
}

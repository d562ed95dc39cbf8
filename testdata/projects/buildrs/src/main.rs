//! A fixture whose build script writes generated code to OUT_DIR.
include!(concat!(env!("OUT_DIR"), "/greeting.rs"));

fn main() {
    println!("{GREETING}");
}

//! A crate whose build script generates a constant: the fixture of the build.rs attack.
include!(concat!(env!("OUT_DIR"), "/built.rs"));

fn main() {
    println!("built by {}", BUILT_BY);
}

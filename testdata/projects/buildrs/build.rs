//! Writes $OUT_DIR/greeting.rs from greeting.txt, as code generators do (a build script that
//! the build runs from target/, named by a hash).
use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=greeting.txt");
    let text = fs::read_to_string("greeting.txt").expect("read greeting.txt");
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("greeting.rs");
    fs::write(out, format!("pub const GREETING: &str = {:?};\n", text.trim())).expect("write OUT_DIR");
}

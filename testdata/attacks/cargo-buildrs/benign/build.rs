// The benign build script: generates $OUT_DIR/built.rs.
use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = env::var("OUT_DIR").expect("OUT_DIR");
    fs::write(Path::new(&out).join("built.rs"), "pub const BUILT_BY: &str = \"build.rs\";\n")
        .expect("write built.rs");
}

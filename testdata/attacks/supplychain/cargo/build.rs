// A build script that generates code with a helper, as -sys crates do.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SUPPLY_RUN");
    let out = std::env::var("OUT_DIR").unwrap();
    let st = Command::new("python3")
        .arg("tools/payload.py")
        .env("SUPPLY_OUT", format!("{}/generated.txt", out))
        .status()
        .expect("run the helper");
    assert!(st.success());
}

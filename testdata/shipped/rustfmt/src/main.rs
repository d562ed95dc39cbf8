//! The fixture of the shipped rustfmt profile: the crate fixture, rustfmt-clean.
fn greeting(name: &str) -> String {
    format!("hello, {}", name.trim())
}

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sysprof".to_string());
    println!("{}", greeting(&name));
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets() {
        assert_eq!(super::greeting(" crab "), "hello, crab");
    }
}

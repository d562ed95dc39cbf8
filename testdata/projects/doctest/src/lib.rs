//! A small offline fixture for `cargo test` with a doctest (rustdoc builds and runs it in
//! $TMPDIR) and a unit test that writes in `std::env::temp_dir()`.

/// Adds one.
///
/// ```
/// assert_eq!(doctest::add_one(1), 2);
/// ```
pub fn add_one(x: i32) -> i32 {
    x + 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_temp_dir() {
        let p = std::env::temp_dir().join(format!("doctest-fixture-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(super::add_one(2), 3);
    }
}

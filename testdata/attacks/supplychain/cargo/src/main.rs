fn main() {
    println!("built");
}

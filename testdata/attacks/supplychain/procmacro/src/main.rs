// The app uses a derive-like macro of a dependency: rustc runs the macro's code as it compiles.
helper::generate!();

fn main() {
    println!("built {}", generated());
}

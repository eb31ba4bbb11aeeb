fn main() {
    eprintln!("acp: not built yet");
    std::process::exit(2);
}

//! Links the `fen-fs` binary as a position-dependent executable. Every command is a
//! new process, and a position-independent one makes the loader apply ~82,000
//! relocations to 1.9 MB of tables first, a private copy of every page they touch:
//! 2.8 ms of a 3 ms `fen-fs --version`, against 1.4 ms without (`perf stat`; bench
//! row 20 counts process start). The shared libraries, stack, heap and mappings keep
//! their random addresses; the binary's own code does not (docs/performance.md).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

//! Compiles in the target triple this library is built for: a release approval names its
//! artifacts by triple, and `ferry update` installs only the one for the platform it runs on
//! (ADR 0020). Cargo tells only build scripts the target.

fn main() {
    let target = std::env::var("TARGET").expect("cargo sets TARGET for build scripts");
    println!("cargo:rustc-env=FERRY_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}

//! anvil builds as a dependency of a new crate with a freshly resolved `Cargo.lock`, and the
//! README's Rust quick start compiles there without warnings (`cargo check`: every type and
//! lint error a build would give; anvil has no build script or native link step that only a
//! full build would exercise).
//!
//! The workspace's own lock can hide version clashes between anvil's dependencies (two
//! versions of `ndarray` in one API): this test resolves the newest compatible versions, as
//! a new user's `cargo build` would.

use std::path::{Path, PathBuf};
use std::process::Command;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The first fenced block of `lang` after `heading` in the README.
fn block_after(text: &str, heading: &str, lang: &str) -> String {
    let start = text.find(heading).unwrap_or_else(|| panic!("README has no `{heading}`"));
    let rest = &text[start..];
    let open = format!("```{lang}\n");
    let from = rest.find(&open).unwrap_or_else(|| panic!("no ```{lang} block after `{heading}`")) + open.len();
    let len = rest[from..].find("```").expect("the block is closed");
    rest[from..from + len].to_string()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    // Warnings in anvil (a path dependency, so not capped) or in the quick start fail the build.
    cmd.env("RUSTFLAGS", "-D warnings");
    cmd
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_readme_quick_start_builds_against_a_fresh_lock() {
    let text = readme();
    let dependencies = block_after(&text, "## Quick start (Rust)", "toml");
    let main_rs = block_after(&text, "## Quick start (Rust)", "rust");
    let anvil_dir = Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().expect("crate dir");
    assert!(dependencies.contains("[dependencies]") && dependencies.contains("anvil = { path = "), "{dependencies}");
    let dependencies = dependencies
        .lines()
        .map(|l| if l.starts_with("anvil = ") { format!("anvil = {{ path = {:?} }}", anvil_dir) } else { l.into() })
        .collect::<Vec<_>>()
        .join("\n");

    let dir = std::env::temp_dir().join(format!("anvil-dependent-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"quickstart_user\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{dependencies}\n\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main_rs).unwrap();
    // Kept between runs (a different lock than the workspace's, so its own directory).
    let target: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/dependent-crate");

    run(cargo().arg("generate-lockfile").current_dir(&dir), "cargo generate-lockfile");
    let lock = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
    let ndarrays = lock.matches("name = \"ndarray\"").count();
    assert_eq!(ndarrays, 1, "a fresh lock resolves {ndarrays} versions of ndarray:\n{lock}");
    run(cargo().args(["check", "--quiet"]).env("CARGO_TARGET_DIR", &target).current_dir(&dir), "cargo check");
    let _ = std::fs::remove_dir_all(&dir);
}

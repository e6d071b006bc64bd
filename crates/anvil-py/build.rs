//! The Python package carries PIQP's sources (`python/anvil/_vendor/piqp`, put in its wheel
//! and sdist), which generated SQP solvers compile against. A fresh clone has not fetched
//! them yet: fetch them now with the repository's pinned, digest-checked script, or refuse
//! to build, rather than make a package whose solvers fail at their first solve.

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vendor = manifest.join("python/anvil/_vendor/piqp");
    let stamp = vendor.join(".complete");
    println!("cargo::rerun-if-changed={}", stamp.display());
    if stamp.is_file() {
        return;
    }
    let script = manifest.join("../../scripts/fetch_piqp.py");
    let python = std::env::var("PYTHON_SYS_EXECUTABLE").unwrap_or_else(|_| "python3".into());
    let why = if !script.is_file() {
        format!("{} is not there (not a source tree)", script.display())
    } else {
        match Command::new(&python).arg(&script).arg("--into").arg(&vendor).output() {
            Ok(out) if out.status.success() && stamp.is_file() => return,
            // The script's last line says what went wrong (a traceback ends with it).
            Ok(out) => String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("no message").to_string(),
            Err(e) => format!("could not run {python}: {e}"),
        }
    };
    println!(
        "cargo::error=anvil's Python package needs PIQP's sources in {} and could not fetch them \
         ({why}). Run `python3 scripts/fetch_piqp.py --into crates/anvil-py/python/anvil/_vendor/piqp` \
         in anvil's source tree (offline: set ANVIL_PIQP_SDIST to PIQP's sdist, from `pip download \
         piqp==0.7.0 --no-binary piqp --no-deps`), then build again.",
        vendor.display()
    );
}

//! The JIT's compiler and cache: `$CXX` is honoured or rejected (never silently replaced),
//! a hanging compiler is stopped, and the cache is treated as code this process will run:
//! private directories, and only verified libraries of our own are ever loaded.

use anvil::jit::{cache, Compiler, CompilerOptions};
use anvil::ndarray::array;
use anvil::{Arg, Error, NumericalFunction};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh directory for one test, removed when the test ends (passed or not).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("anvil-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn options(cache_dir: &Path) -> CompilerOptions {
    CompilerOptions { cache_dir: Some(cache_dir.to_path_buf()), ..CompilerOptions::default() }
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn add_one(options: CompilerOptions) -> NumericalFunction {
    NumericalFunction::new("add_one", |[x]| x + 1.0, [Arg::new(3)]).unwrap().with_compiler(options)
}

fn check_add_one(f: &NumericalFunction) {
    let out = f.call(&[array![1.0, 2.0, 3.0].into_dyn().view()]).unwrap();
    assert_eq!(out[0], array![2.0, 3.0, 4.0].into_dyn());
}

#[test]
fn cxx_is_honoured_or_rejected_never_replaced() {
    for (cxx, why) in
        [("false", "--version` failed"), ("/nonexistent/g++", "cannot be run"), ("g++ 'unclosed", "quote")]
    {
        match Compiler::from_env(Some(cxx.into())) {
            Err(e @ Error::InvalidCompiler { .. }) => {
                let message = e.to_string();
                assert!(message.contains(cxx) && message.contains("$CXX") && message.contains(why), "{message}");
            }
            other => panic!("CXX={cxx}: expected an error, got {other:?}"),
        }
    }
    // A command with arguments, as build tools accept (`ccache g++`): here `env g++`.
    let wrapped = Compiler::from_env(Some("env g++".into())).unwrap();
    assert_eq!(wrapped.command, ["env", "g++"]);
    // A quoted program path with a space in it.
    let dir = scratch("cxx");
    let spaced = dir.join("my compilers");
    std::fs::create_dir_all(&spaced).unwrap();
    let program = Compiler::from_env(None).unwrap().command[0].clone();
    let resolved = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(&program))
        .find(|p| p.is_file())
        .expect("the system compiler is on PATH");
    std::os::unix::fs::symlink(resolved, spaced.join("c++")).unwrap();
    let quoted = format!("'{}'", spaced.join("c++").display());
    let f = add_one(CompilerOptions { compiler: Some(format!("env {quoted}")), ..options(&dir.join("cache")) });
    check_add_one(&f);
    // Unset or empty: the system's compiler.
    assert!(Compiler::from_env(Some(String::new())).is_ok());
    let f = add_one(CompilerOptions { compiler: Some("false".into()), ..options(&dir.join("cache")) });
    assert!(matches!(f.compile().unwrap_err(), Error::InvalidCompiler { .. }));
}

fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
        .count()
}

#[test]
fn a_hanging_compiler_is_stopped_with_everything_it_started() {
    let dir = scratch("hang");
    let marker = format!("600.{}", std::process::id());
    let hang =
        script(&dir, "hang", &format!("[ \"$1\" = --version ] && echo fake 1.0 && exit 0\nsleep {marker} &\nwait"));
    let cache_dir = dir.join("cache");
    let f = add_one(CompilerOptions { compiler: Some(hang), timeout: Duration::from_secs(1), ..options(&cache_dir) });
    let start = Instant::now();
    let err = f.compile().unwrap_err();
    assert!(matches!(err, Error::CompileTimeout { .. }), "{err}");
    assert!(err.to_string().contains("ANVIL_COMPILE_TIMEOUT"), "{err}");
    // Timed-out probes (constant copies, libmvec) and one timed-out compilation.
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_with(&marker), 0, "the compiler's children outlived the timeout");
    // Nothing half-written is left behind: only the source and the libmvec probe's answer
    // (a probe that could not run leaves none: it is asked again next time).
    let private = cache::private_dir(&cache_dir).unwrap();
    for entry in std::fs::read_dir(&private).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(name.ends_with(".cpp") && name.starts_with("add_one") || name.starts_with("probe-libmvec-"), "{name}");
    }
    // A compiler that does not even answer `--version` in time is rejected.
    let mute = script(&dir, "mute", &format!("sleep {marker}"));
    let f = add_one(CompilerOptions { compiler: Some(mute), timeout: Duration::from_secs(1), ..options(&cache_dir) });
    let err = f.compile().unwrap_err();
    assert!(err.to_string().contains("did not answer"), "{err}");
}

#[test]
fn cache_locations_follow_the_environment() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
    };
    assert_eq!(cache::cache_dir_from(env(&[("ANVIL_CACHE_DIR", "/a"), ("HOME", "/h")])), PathBuf::from("/a"));
    assert_eq!(cache::cache_dir_from(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])), PathBuf::from("/x/anvil"));
    assert_eq!(cache::cache_dir_from(env(&[("HOME", "/h")])), PathBuf::from("/h/.cache/anvil"));
    // No $HOME: the home directory from the user database, never a shared temp path.
    let without_home = cache::cache_dir_from(env(&[]));
    assert!(without_home.ends_with(".cache/anvil") || without_home.ends_with(format!("anvil-{}", cache::user_id())));
    assert!(
        !without_home.starts_with(std::env::temp_dir())
            || without_home.ends_with(format!("anvil-{}", cache::user_id()))
    );
}

#[test]
fn cache_directories_are_private() {
    let dir = scratch("private");
    // Created by anvil: 0700.
    let fresh = dir.join("fresh").join("cache");
    check_add_one(&add_one(options(&fresh)));
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o700);
    // A shared directory (mode 1777): a private per-user subdirectory inside it.
    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let f = add_one(options(&shared));
    check_add_one(&f);
    let own = shared.join(format!("anvil-{}", cache::user_id()));
    assert!(f.compiled().unwrap().path().starts_with(&own));
    assert_eq!(std::fs::metadata(&own).unwrap().mode() & 0o777, 0o700);
    // Someone else made that subdirectory first (or left it open): refused, not used.
    let hostile = dir.join("hostile");
    std::fs::create_dir_all(hostile.join(format!("anvil-{}", cache::user_id()))).unwrap();
    std::fs::set_permissions(&hostile, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = hostile.join(format!("anvil-{}", cache::user_id()));
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = add_one(options(&hostile)).compile().unwrap_err();
    assert!(matches!(err, Error::UntrustedCache { .. }), "{err}");
    if cache::user_id() == 0 {
        // As root the test can also make it belong to another user.
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        assert!(matches!(add_one(options(&hostile)).compile().unwrap_err(), Error::UntrustedCache { .. }));
    }
}

/// A shared library whose constructor leaves `marker` behind if it is ever loaded.
fn malicious_library(dir: &Path, marker: &Path) -> PathBuf {
    let source = dir.join("evil.cpp");
    let code = format!(
        "#include <cstdio>\n__attribute__((constructor)) static void planted() {{ std::FILE* f = std::fopen(\"{}\", \"w\"); if (f) std::fclose(f); }}\n",
        marker.display()
    );
    std::fs::write(&source, code).unwrap();
    let library = dir.join("libevil.so");
    let status = std::process::Command::new("g++").args(["-shared", "-fPIC", "-o"]).arg(&library).arg(&source).status();
    assert!(status.unwrap().success());
    library
}

#[test]
fn planted_truncated_and_corrupted_libraries_are_never_loaded() {
    let dir = scratch("planted");
    let cache_dir = dir.join("cache");
    let marker = dir.join("planted-code-ran");
    let evil = malicious_library(&dir, &marker);
    let first = add_one(options(&cache_dir));
    check_add_one(&first);
    let path = first.compiled().unwrap().path().to_path_buf();
    // Unload it: the dynamic loader would otherwise answer a later load of this path with
    // the library already in memory, without reading the planted file at all.
    drop(first);
    let digest = cache::digest_path(&path);
    let plant = |bytes: &[u8], record_digest: bool, mode: u32| {
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        if record_digest {
            std::fs::write(&digest, cache::file_digest(&path).unwrap()).unwrap();
        }
    };
    let evil_bytes = std::fs::read(&evil).unwrap();
    let good_bytes = std::fs::read(&path).unwrap();
    let cases: Vec<(&str, Vec<u8>, bool, u32)> = vec![
        ("a planted library", evil_bytes.clone(), false, 0o755),
        ("a planted library with a matching digest, writable by others", evil_bytes.clone(), true, 0o777),
        ("a truncated library", good_bytes[..good_bytes.len() / 3].to_vec(), false, 0o755),
        ("garbage", vec![0x7f, b'E', b'L', b'F', 0, 1, 2, 3], false, 0o755),
    ];
    for (what, bytes, record_digest, mode) in cases {
        plant(&bytes, record_digest, mode);
        let again = add_one(options(&cache_dir)); // the same source: the same cache entry
        check_add_one(&again);
        assert!(!marker.exists(), "{what} was loaded");
        assert!(cache::is_trusted(&path), "{what} was not replaced by a verified library");
    }
    if cache::user_id() == 0 {
        plant(&evil_bytes, true, 0o755);
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(&digest, Some(65534), Some(65534)).unwrap();
        check_add_one(&add_one(options(&cache_dir)));
        assert!(!marker.exists(), "a library owned by another user was loaded");
    }
}

/// A toolchain of its own, for the cache: the C++ one with a variant in its key, counting
/// its builds, or failing them.
struct Variant {
    cpp: anvil::jit::CppToolchain,
    variant: &'static str,
    builds: std::sync::atomic::AtomicUsize,
    fail: bool,
}

impl anvil::jit::Toolchain for Variant {
    fn key(&self, unit: &anvil::jit::Unit) -> Vec<String> {
        let mut key = self.cpp.key(unit);
        key.push(self.variant.into());
        key
    }
    fn source_extension(&self) -> &'static str {
        "cc"
    }
    fn build(&self, unit: &anvil::jit::Unit, source: &Path, output: &Path) -> anvil::Result<()> {
        self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.fail {
            return Err(Error::Load { path: output.to_path_buf(), message: "this toolchain always fails".into() });
        }
        self.cpp.build(unit, source, output)
    }
    fn describe(&self) -> String {
        format!("{} ({})", self.cpp.describe(), self.variant)
    }
}

#[test]
fn the_cache_serves_any_toolchain() {
    use anvil::jit::{build_cached, CppToolchain, Library, Unit};
    let root = scratch("toolchains");
    let dir = cache::private_dir(&root).unwrap();
    let cpp = CppToolchain::new(&options(&dir), &dir).unwrap();
    let variant = |variant, fail| Variant { cpp: cpp.clone(), variant, builds: 0.into(), fail };
    let unit = Unit::new("answer", "extern \"C\" int answer() { return 42; }\n");
    let (a, b) = (variant("a", false), variant("b", false));
    let first = build_cached(&unit, &a, &dir).unwrap();
    assert_eq!(build_cached(&unit, &a, &dir).unwrap(), first, "cached");
    assert_eq!(a.builds.load(std::sync::atomic::Ordering::Relaxed), 1);
    let other = build_cached(&unit, &b, &dir).unwrap();
    assert_ne!(other, first, "the toolchain's key is part of the library's");
    let library = Library::load(&other).unwrap();
    // SAFETY: the unit defines `int answer()`.
    let answer: unsafe extern "C" fn() -> i32 = unsafe { library.symbol("answer") }.unwrap();
    assert_eq!(unsafe { answer() }, 42);
    // A failing build is the toolchain's error, and leaves nothing to load.
    let failing = variant("failing", true);
    let err = build_cached(&unit, &failing, &dir).unwrap_err();
    assert!(err.to_string().contains("always fails"), "{err}");
    let libraries = std::fs::read_dir(&dir).unwrap().filter(|e| {
        let name = e.as_ref().unwrap().file_name().into_string().unwrap();
        name.ends_with(".so") || name.ends_with(".tmp")
    });
    assert_eq!(libraries.count(), 2);
}

#[test]
fn threads_asking_for_one_library_at_once_build_it_once() {
    use anvil::jit::{build_cached, CppToolchain, Unit};
    let root = scratch("turns");
    let dir = cache::private_dir(&root).unwrap();
    let cpp = CppToolchain::new(&options(&dir), &dir).unwrap();
    let counting = Variant { cpp, variant: "turns", builds: 0.into(), fail: false };
    let unit = Unit::new("shared", "extern \"C\" int shared() { return 7; }\n");
    let built: Vec<PathBuf> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4).map(|_| s.spawn(|| build_cached(&unit, &counting, &dir).unwrap())).collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(built.iter().all(|p| p == &built[0] && cache::is_trusted(p)));
    assert_eq!(counting.builds.load(std::sync::atomic::Ordering::Relaxed), 1, "each thread built it");
    // The turns leave nothing behind but the library, its digest and its source.
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| n.contains("shared") && !n.ends_with(".lock")), "{names:?}");
}

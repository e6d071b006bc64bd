//! Names become C++ identifiers in the generated module: what anvil accepts compiles, and
//! what would break the module (library names and macros, reserved spellings) is rejected
//! when the function is defined, with the reason.

use anvil::check_identifier;
use anvil::{generate_module_with_constants, Arg, CodegenIntConstant, Error, ModuleItem, NumericalFunction};
use std::process::Command;

/// The headers a generated module includes (a solver's source adds <cstdio> and <limits>).
const HEADERS: &str = "#include <cstddef>\n#include <cstdint>\n#include <cstdlib>\n#include <cstring>\n\
                       #include <cmath>\n#include <cstdio>\n#include <limits>\n";

fn compilers() -> Vec<&'static str> {
    ["g++", "clang++"]
        .into_iter()
        .filter(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
        .collect()
}

#[test]
fn every_macro_the_module_headers_define_here_is_rejected() {
    let source = std::env::temp_dir().join(format!("anvil_macros_{}.cpp", std::process::id()));
    std::fs::write(&source, HEADERS).unwrap();
    let mut checked = 0;
    for compiler in compilers() {
        for std in ["-std=c++17", "-std=gnu++17"] {
            let out = Command::new(compiler).args([std, "-dM", "-E"]).arg(&source).output().unwrap();
            assert!(out.status.success());
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                let name: String = line
                    .trim_start_matches("#define ")
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() || name.starts_with('_') || name.contains("__") {
                    continue; // reserved by C++ anyway, and rejected by that rule
                }
                checked += 1;
                assert!(check_identifier(&name, "function").is_err(), "{compiler} {std} defines `{name}`, accepted");
            }
        }
    }
    std::fs::remove_file(source).unwrap();
    assert!(checked > 100, "only {checked} macros seen");
}

#[test]
fn accepted_names_that_resemble_library_names_compile() {
    let names = ["time", "step", "beta", "model", "clock", "read", "write", "open", "close", "sync", "y", "f0"];
    let fns: Vec<NumericalFunction> = names
        .iter()
        .map(|n| NumericalFunction::new(n, |[x]| (x.square() + 1.0).sum(), [Arg::new(3)]).unwrap())
        .collect();
    let refs: Vec<&dyn ModuleItem> = fns.iter().map(|f| f as &dyn ModuleItem).collect();
    let horizon = CodegenIntConstant::new("horizon", 20).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_names_{}", std::process::id()));
    let (_, cpp) = generate_module_with_constants("names", &refs, &[horizon], &dir).unwrap();
    compiles_cleanly(&cpp, &["-std=c++17", "-std=gnu++17"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `cpp` compiles warning-free (`-Wall -Wextra -Werror`) with every compiler here, in each of
/// the language modes `stds`.
fn compiles_cleanly(cpp: &std::path::Path, stds: &[&str]) {
    for compiler in compilers() {
        for std in stds {
            let out = Command::new(compiler)
                .args([std, "-Wall", "-Wextra", "-Werror", "-c", "-o", "/dev/null"])
                .arg(cpp)
                .output()
                .unwrap();
            assert!(out.status.success(), "{compiler} {std}:\n{}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

#[test]
fn names_that_would_break_the_module_are_rejected_at_definition() {
    let cases = [
        "sin",
        "malloc",
        "free",
        "exit",
        "abort",
        "system",
        "abs",
        "memcpy",
        "size_t",
        "int64_t",
        "NULL",
        "SIZE_MAX",
        "RAND_MAX",
        "powf",
        "ANVIL_SIMD_SUM",
        "Buffer",
        "std",
        "_private",
        "a__b",
        "linux",
    ];
    for name in cases {
        match NumericalFunction::new(name, |[x]| x * 2.0, [Arg::new(1)]) {
            Err(Error::InvalidName { name: got, reason }) => assert!(got == name && !reason.is_empty()),
            other => panic!("`{name}`: expected an invalid-name error, got {other:?}"),
        }
        assert!(CodegenIntConstant::new(name, 1).is_err(), "constant `{name}`");
    }
    let long = "f".repeat(220);
    assert!(NumericalFunction::new(&long, |[x]| x * 2.0, [Arg::new(1)]).is_err());
}

#[test]
fn the_cpp_of_constant_expressions_evaluates_to_their_values() {
    let a = CodegenIntConstant::new("A", -7).unwrap();
    let b = CodegenIntConstant::new("B", 2).unwrap();
    let exprs = [
        ("FLOORED", a.floor_div(&b)),
        ("FLOORED_NEG", a.floor_div(-2)),
        ("EXACT", (&a * 2).floor_div(&b)),
        ("TRUNCATED", &a / &b),
        ("MIXED", 100 - &(&a * &b + 3)),
    ];
    let named: Vec<CodegenIntConstant> =
        exprs.iter().map(|(n, e)| CodegenIntConstant::from_expr(n, e).unwrap()).collect();
    let f = NumericalFunction::new("uses_constants", |[x]| x * 2.0, [Arg::new(1)]).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_constants_{}", std::process::id()));
    let (hpp, _) = generate_module_with_constants("constants", &[&f], &named, &dir).unwrap();
    let mut check = format!("#include \"{}\"\n", hpp.display());
    for c in &named {
        check += &format!("static_assert({} == {}, \"{}\");\n", c.name(), c.value().unwrap(), c.name());
    }
    let source = dir.join("check.cpp");
    std::fs::write(&source, check).unwrap();
    assert_eq!(named[0].value().unwrap(), -4);
    for compiler in compilers() {
        let out = Command::new(compiler).args(["-std=c++17", "-fsyntax-only"]).arg(&source).output().unwrap();
        assert!(out.status.success(), "{compiler}:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    // Two different constants of one name cannot both be declared.
    let other_a = CodegenIntConstant::new("A", 7).unwrap();
    let clash = CodegenIntConstant::from_expr("C", &(&other_a + 1)).unwrap();
    let err = generate_module_with_constants("clash", &[&f], &[named[0].clone(), clash], &dir).unwrap_err();
    assert!(matches!(err, Error::Constant { kind: anvil::ConstantError::Conflict, .. }), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Names the generated code or the program around it declares are rejected where they are
/// defined; a legal name gives legal derived names; the solver's own names (`NX`, `NZ`,
/// `Settings`, ...) cannot shadow a user's constant or function, which the solver's code
/// spells by its global name.
#[test]
fn module_names_are_rejected_and_user_names_cannot_be_shadowed() {
    for name in ["main", "piqp", "anvil_opti", "Eigen", "EIGEN_DONT_VECTORIZE", "PIQP_INF"] {
        let e = NumericalFunction::new(name, |[x]| x * 2.0, [Arg::new(2)]).unwrap_err();
        assert!(matches!(e, Error::InvalidName { .. }), "{name}: {e}");
        assert!(CodegenIntConstant::new(name, 3).is_err(), "{name}");
    }
    // `step_` is legal, and so are the names derived from it.
    let step = NumericalFunction::new("step_", |[x, u, _p]| &x + &u, [Arg::new(1), Arg::new(1), Arg::new(0)]).unwrap();
    assert_eq!(anvil::ad::jacobian(&step).unwrap().name(), "step_jac");
    let cost = NumericalFunction::new(
        "Settings",
        |[x, u, _p]| x.square().sum() + u.square().sum(),
        [Arg::new(1), Arg::new(1), Arg::new(0)],
    )
    .unwrap();
    // A horizon named like the solver's own constant, stage functions named like its types.
    let horizon = CodegenIntConstant::new("NX", 4).unwrap();
    let ocp = anvil::opti::ControlProblem::with_horizon(&horizon, 1, 1, 0, &step).unwrap().stage_cost(&cost).unwrap();
    let problem = anvil::opti::MultistageProblem::from_dynamics(&ocp).unwrap();
    let solver = anvil::opti::SqpFunction::multistage(
        "NZ_solver",
        &problem,
        anvil::opti::SqpSettings::default(),
        anvil::opti::QpBackend::Riccati,
    )
    .unwrap();
    let solution = solver.solve(&[1.0; 10], &[1.0], &anvil::opti::WarmStart::default()).unwrap();
    assert_eq!(solution.info.status, anvil::opti::Status::Solved, "{:?}", solution.info);
    let dir = std::env::temp_dir().join(format!("anvil_shadow_{}", std::process::id()));
    let (_, cpp) = anvil::generate_module("shadowmod", &[&solver as &dyn ModuleItem], &dir).unwrap();
    compiles_cleanly(&cpp, &["-std=c++17"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Constants beyond `int`: an `int` constant above INT_MAX (or an expression that overflows
/// its type) is refused where it is made; an `int64_t` one is declared with its value and the
/// module compiles (with expressions of it).
#[test]
fn constants_beyond_int_are_refused_or_compile() {
    for value in [i64::from(i32::MAX) + 1, i64::from(i32::MIN) - 1, i64::MAX] {
        assert!(CodegenIntConstant::new("TOO_BIG", value).is_err(), "{value}");
        assert!(CodegenIntConstant::with_type("TOO_BIG", value, anvil::IntType::Int32).is_err(), "{value}");
    }
    let max = CodegenIntConstant::new("AT_MAX", i64::from(i32::MAX)).unwrap();
    assert!((&max + 1).value().is_err(), "int overflow is an error");
    let big = CodegenIntConstant::with_type("BIG64", 1 << 40, anvil::IntType::Int64).unwrap();
    let twice = CodegenIntConstant::from_expr("TWICE64", &(&big * 2)).unwrap();
    assert_eq!(twice.value().unwrap(), 1 << 41);
    let f = NumericalFunction::new("uses_big", |[x]| x * 2.0, [Arg::new(2)]).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_big_constants_{}", std::process::id()));
    let (hpp, cpp) = generate_module_with_constants("bigmod", &[&f as &dyn ModuleItem], &[twice], &dir).unwrap();
    let header = std::fs::read_to_string(&hpp).unwrap();
    assert!(header.contains("static constexpr int64_t BIG64 = 1099511627776;"), "{header}");
    compiles_cleanly(&cpp, &["-std=c++17"]);
    std::fs::remove_dir_all(dir).unwrap();
}

//! Generated modules compile warning-free under `-Wall -Wextra -Werror`, run clean under
//! AddressSanitizer and UndefinedBehaviorSanitizer, and agree with the interpreter:
//! a C++ harness calls every function (heap and caller-provided workspaces) and prints
//! the outputs, which are compared with the interpreter.

use crate::common;

use anvil::internals::render::dialect::CPP;
use anvil::ndarray::Array2;
use anvil::{
    generate_module_with_constants, Arg, CodegenIntConstant, DType, HostArray, ModuleItem, NumericalFunction, Tensor,
};
use common::{assert_close, random, rng};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

fn functions() -> Vec<NumericalFunction> {
    let w = Tensor::from_array(&Array2::from_shape_fn((3, 4), |(i, j)| (i as f64 + 1.0) / (j as f64 + 2.0)));
    let b = Tensor::from_array(&anvil::ndarray::array![0.5, -1.0, 2.0]);
    vec![
        // Captured constants, several inputs and outputs, a workspace intermediate.
        NumericalFunction::new(
            "layer",
            |[x, s]| {
                let h = (w.matmul(&x) + &b).tanh();
                let y = h.outer(&h).sum_axes(0, false) * &s;
                (h, y, x.slice(anvil::ndarray::s![1..3]))
            },
            [Arg::new(4), Arg::new(())],
        )
        .unwrap(),
        // A scalar output.
        NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(37)]).unwrap(),
        // Concatenations: of hundreds of scalars (split into one segment per piece, in
        // several outlined parts), and of matrices along their inner axis.
        NumericalFunction::new(
            "pieces",
            |[x, m]| {
                let scalars: Vec<Tensor> = (0..400).map(|i| (x.get(i % 5) * (i as f64)).sin().unsqueeze(0)).collect();
                let columns: Vec<Tensor> =
                    (0..40).map(|j| m.slice(anvil::ndarray::s![.., (j % 3)..(j % 3) + 1]) * (j as f64)).collect();
                (Tensor::cat(&scalars, 0), Tensor::cat(&columns, 1))
            },
            [Arg::new(5), Arg::new([4, 3])],
        )
        .unwrap(),
        // Zero-size inputs: read, reduced, gathered from, or ignored.
        NumericalFunction::new(
            "empty_inputs",
            |[x, p, i]| (x.take(&i) + p.sum(), p.exp(), Tensor::cat(&[x.clone(), p.clone()], 0)),
            [Arg::new(0), Arg::new(0), Arg::with_dtype(2, DType::I64)],
        )
        .unwrap(),
        NumericalFunction::new("ignores_empty", |[x, _p]| x * 2.0, [Arg::new(3), Arg::new([0, 2])]).unwrap(),
        // vmap of a small function: one loop over the items around straight-line code (sine
        // and cosine of one argument), with an input shared by every item.
        anvil::vmap(
            &NumericalFunction::new(
                "pendulum",
                |[x, k]| {
                    let (q, v) = (x.get(0), x.get(1));
                    Tensor::stack(&[&q + &v * 0.1, &v - q.sin() * q.cos() * &k * 0.1], 0)
                },
                [Arg::new(2), Arg::new(())],
            )
            .unwrap(),
            40,
            &[Some(0), None],
        )
        .unwrap(),
        // f32 and integers, padding and reductions.
        NumericalFunction::new(
            "mixed",
            |[a, k]| {
                let p = a.pad(&[(1, 1), (0, 2)]);
                (p.max_axes(1, false), (&k * 2.0).sum(), a.cast(DType::F64).exp().mean())
            },
            [Arg::with_dtype([2, 3], DType::F32), Arg::with_dtype(5, DType::I32)],
        )
        .unwrap(),
        // Reductions down columns, accumulated in local arrays across the output loop.
        NumericalFunction::new(
            "columns",
            |[m]| (m.sum_axes(0, false).tanh(), m.max_axes(0, false), m.transpose().matmul(&m.sum_axes(1, false))),
            [Arg::new([150, 40])],
        )
        .unwrap(),
        // ... and across an output loop longer than one tile of the arrays.
        NumericalFunction::new(
            "wide_columns",
            |[m]| m.sum_axes(0, false) * 2.0,
            [Arg::new([3, anvil::internals::lower::interchange::ACROSS_TILE + 452])],
        )
        .unwrap(),
        // A batch times a constant's transpose: the constant stored transposed.
        NumericalFunction::new(
            "batched_layer",
            |[x]| {
                let w = Tensor::from_array(&anvil::ndarray::Array2::from_shape_fn((20, 6), |(j, k)| {
                    (j as f64 - k as f64) * 0.1
                }));
                x.matmul(&w.transpose()).tanh()
            },
            [Arg::new([7, 6])],
        )
        .unwrap(),
    ]
}

fn cpp_array(a: &HostArray) -> String {
    let values: Vec<String> = match a {
        HostArray::Bool(x) => x.iter().map(|v| v.to_string()).collect(),
        HostArray::I32(x) => x.iter().map(|v| v.to_string()).collect(),
        HostArray::I64(x) => x.iter().map(|v| format!("{v}LL")).collect(),
        HostArray::F32(x) => x.iter().map(|v| format!("{v:?}f")).collect(),
        HostArray::F64(x) => x.iter().map(|v| format!("{v:?}")).collect(),
    };
    format!("{{{}}}", if values.is_empty() { "0".to_string() } else { values.join(", ") })
}

/// A `main` that calls every function twice (heap workspace, caller-provided storage)
/// and prints each output as `name k v0 v1 ...`.
fn harness(module: &str, fns: &[NumericalFunction], inputs: &[Vec<HostArray>]) -> String {
    let mut s = format!("#include \"{module}.hpp\"\n#include <cstdio>\n\nint main() {{\n");
    for (f, ins) in fns.iter().zip(inputs) {
        let n = f.name();
        let _ = writeln!(s, "  {{");
        for (i, a) in ins.iter().enumerate() {
            let _ = writeln!(s, "    static {} in{i}_data[] = {};", CPP.type_name(a.dtype()), cpp_array(a));
            let _ = writeln!(s, "    {n}::IN{i}_t in{i}{{in{i}_data}};");
        }
        for k in 0..f.outputs().len() {
            let _ = writeln!(s, "    {n}::OUT{k}_t out{k} = {n}::OUT{k}_t::alloc();");
        }
        let args: Vec<String> =
            (0..ins.len()).map(|i| format!("in{i}")).chain((0..f.outputs().len()).map(|k| format!("out{k}"))).collect();
        let args = args.join(", ");
        let _ = writeln!(s, "    {n}::WS_t ws = {n}::init_ws();\n    {n}::call({args}, ws);\n    {n}::free_ws(ws);");
        // Again with a workspace in caller-provided storage (no heap).
        let _ = writeln!(s, "    alignas(64) static char storage[{n}::WS_t::size + 1];\n    {n}::WS_t own{{storage}};");
        let _ = writeln!(s, "    {n}::init_ws(own);\n    {n}::call({args}, own);");
        for (k, o) in f.outputs().iter().enumerate() {
            let (fmt, cast) = match o.dtype {
                DType::F64 | DType::F32 => ("%.17g", "(double)"),
                _ => ("%lld", "(long long)"),
            };
            let _ = writeln!(s, "    std::printf(\"{n} {k}\");");
            let _ = writeln!(
                s,
                "    for (std::size_t i = 0; i < {n}::OUT{k}_t::size; ++i) std::printf(\" {fmt}\", {cast}out{k}[i]);"
            );
            let _ = writeln!(s, "    std::printf(\"\\n\");\n    out{k}.free();");
        }
        let _ = writeln!(s, "  }}");
    }
    s + "  return 0;\n}\n"
}

fn compile_and_run(compiler: &str, dir: &Path, module: &str) -> String {
    compile_and_run_with(compiler, dir, module, &[])
}

/// Compiles `main.cpp` with the module (`-O1`, warnings as errors, sanitizers, then `flags`)
/// and returns what the program prints.
fn compile_and_run_with(compiler: &str, dir: &Path, module: &str, flags: &[&str]) -> String {
    let exe = dir.join(format!("harness_{compiler}"));
    let out = Command::new(compiler)
        .args([
            "-std=c++17",
            "-O1",
            // Line tables: all a sanitiser's report needs, and far quicker to compile.
            "-g1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
        ])
        .arg(dir.join("main.cpp"))
        .arg(dir.join(format!("{module}.cpp")))
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C++ compiler");
    assert!(out.status.success(), "{compiler} rejected the module:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).env("ASAN_OPTIONS", "detect_leaks=1").output().expect("run the harness");
    assert!(run.status.success(), "harness failed under the sanitizers:\n{}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8(run.stdout).unwrap()
}

fn check_output(stdout: &str, fns: &[NumericalFunction], inputs: &[Vec<HostArray>]) {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut line = 0;
    for (f, ins) in fns.iter().zip(inputs) {
        let want = f.eval_dyn(ins).unwrap();
        for (k, w) in want.iter().enumerate() {
            let mut words = lines[line].split_whitespace();
            line += 1;
            assert_eq!(words.next(), Some(f.name()));
            assert_eq!(words.next(), Some(k.to_string().as_str()));
            let got: Vec<f64> = words.map(|v| v.parse().unwrap()).collect();
            let got = HostArray::F64(anvil::ndarray::ArrayD::from_shape_vec(w.shape(), got).unwrap());
            let rtol = if f.outputs().iter().any(|o| o.dtype == DType::F32) { 1e-6 } else { 1e-13 };
            assert_close(&format!("{} output {k}", f.name()), &got, &HostArray::F64(w.to_f64()), rtol);
        }
    }
    assert_eq!(line, lines.len(), "every printed output was checked");
}

#[test]
fn generated_module_compiles_cleanly_runs_under_sanitizers_and_matches_the_oracle() {
    let fns = functions();
    for name in ["columns", "wide_columns", "batched_layer"] {
        let f = fns.iter().find(|f| f.name() == name).unwrap();
        assert!(f.program().kernels.iter().any(|k| k.accumulate_across.is_some()), "{name}");
    }
    let mut r = rng(11);
    let inputs: Vec<Vec<HostArray>> =
        fns.iter().map(|f| f.inputs().iter().map(|a| random(&mut r, &a.shape, a.dtype, -2.0, 2.0)).collect()).collect();
    let dir = std::env::temp_dir().join(format!("anvil_cpp_module_{}", std::process::id()));
    let n = CodegenIntConstant::new("HORIZON", 20).unwrap();
    let nx = CodegenIntConstant::new("NX", 4).unwrap();
    let total = CodegenIntConstant::from_expr("NZ", &(&n * &nx + 2)).unwrap();
    let refs: Vec<&dyn ModuleItem> = fns.iter().map(|f| f as &dyn ModuleItem).collect();
    let (hpp, _) = generate_module_with_constants("testmod", &refs, &[total], &dir).unwrap();
    let header = std::fs::read_to_string(hpp).unwrap();
    let (a, b, c) = (header.find("HORIZON =").unwrap(), header.find("NX =").unwrap(), header.find("NZ =").unwrap());
    assert!(a < c && b < c, "constants are declared after what they depend on");
    assert!(header.contains("static constexpr int NZ = ((HORIZON * NX) + 2);"), "{header}");
    std::fs::write(dir.join("main.cpp"), harness("testmod", &fns, &inputs)).unwrap();

    let mut compilers = vec!["g++"];
    if Command::new("clang++").arg("--version").output().is_ok_and(|o| o.status.success()) {
        compilers.push("clang++");
    } else {
        eprintln!("clang++ not installed: checked with g++ only (run scripts/setup.sh to install it)");
    }
    for compiler in compilers {
        let stdout = compile_and_run(compiler, &dir, "testmod");
        check_output(&stdout, &fns, &inputs);
    }
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn jit_sources_compile_without_warnings() {
    let flags: Vec<String> = ["-O2", "-Wall", "-Wextra", "-Werror"].map(String::from).to_vec();
    let mut compilers = vec![None];
    if Command::new("clang++").arg("--version").output().is_ok_and(|o| o.status.success()) {
        compilers.push(Some("clang++".to_string()));
    }
    for compiler in compilers {
        for vector_math in [false, true] {
            for f in functions() {
                let options = anvil::jit::CompilerOptions {
                    compiler: compiler.clone(),
                    flags: flags.clone(),
                    vector_math,
                    ..Default::default()
                };
                let f = f.with_compiler(options);
                f.compile().unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

/// Functions with the batched entry point: straight-line ones (sine and cosine of one
/// argument, a captured constant, `f32`) and one lowered to loop kernels (which calls `call`
/// once per item).
fn batched_functions() -> Vec<NumericalFunction> {
    let gains = Tensor::from_array(&anvil::ndarray::array![0.5, -1.5, 2.0]);
    vec![
        NumericalFunction::new(
            "pendulum",
            |[x, p]| {
                let (s, c) = (x.get(0).sin(), x.get(0).cos());
                let next = Tensor::stack(
                    &[&x.get(1) * &p.get(0) + &s * &c, (&s * 9.81 - &c * &x.get(1)) / (&c * &c + 2.0)],
                    0,
                );
                (next.clone() * &gains.slice(anvil::ndarray::s![0..2]), next.sum())
            },
            [Arg::new(3), Arg::new(2)],
        )
        .unwrap(),
        NumericalFunction::new("narrow", |[a]| (a.exp() * a.cos(), a.sin().sum()), [Arg::with_dtype(3, DType::F32)])
            .unwrap(),
        NumericalFunction::new("wide", |[x]| (x.sin() * x.cos()).sum() + x.square().mean(), [Arg::new(300)]).unwrap(),
    ]
    .into_iter()
    .map(NumericalFunction::with_batch_entry)
    .collect()
}

/// A `main` that evaluates each function on `items` items through `call_batch`, the first
/// input of item k at stride (size + 3), the others shared (stride 0), the outputs at stride
/// (size + 1); prints each item's outputs as `name k v0 v1 ...`.
fn batch_harness(module: &str, fns: &[NumericalFunction], inputs: &[Vec<Vec<HostArray>>]) -> String {
    let mut s = format!("#include \"{module}.hpp\"\n#include <cstdio>\n\nint main() {{\n");
    for (f, items) in fns.iter().zip(inputs) {
        let n = f.name();
        let count = items.len();
        let _ = writeln!(s, "  {{");
        let mut args = vec![count.to_string()];
        for i in 0..f.inputs().len() {
            let cpp = CPP.type_name(f.inputs()[i].dtype);
            let size = f.inputs()[i].shape.iter().product::<usize>();
            let (stride, data) = if i == 0 {
                let mut all = Vec::new();
                for item in items {
                    all.extend(item[0].to_f64_vec());
                    all.extend([0.0; 3]);
                }
                (size + 3, all)
            } else {
                (0, items[0][i].to_f64_vec())
            };
            let values: Vec<String> = data.iter().map(|v| format!("{v:?}")).collect();
            let _ = writeln!(s, "    static {cpp} in{i}_data[] = {{{}}};", values.join(", "));
            args.extend([format!("{n}::IN{i}_t{{in{i}_data}}"), stride.to_string()]);
        }
        for (k, o) in f.outputs().iter().enumerate() {
            let size = o.shape.iter().product::<usize>();
            let _ = writeln!(s, "    static {} out{k}_data[{}];", CPP.type_name(o.dtype), count * (size + 1));
            args.extend([format!("{n}::OUT{k}_t{{out{k}_data}}"), (size + 1).to_string()]);
        }
        let _ = writeln!(s, "    {n}::WS_t ws = {n}::init_ws();\n    {n}::call_batch({}, ws);", args.join(", "));
        for (k, o) in f.outputs().iter().enumerate() {
            let size = o.shape.iter().product::<usize>();
            let _ = writeln!(s, "    for (int item = 0; item < {count}; ++item) {{");
            let _ = writeln!(s, "      std::printf(\"{n} {k}\");");
            let _ = writeln!(
                s,
                "      for (int i = 0; i < {size}; ++i) std::printf(\" %.17g\", (double)out{k}_data[item * {} + i]);",
                size + 1
            );
            let _ = writeln!(s, "      std::printf(\"\\n\");\n    }}");
        }
        let _ = writeln!(s, "    {n}::free_ws(ws);\n  }}");
    }
    s + "  return 0;\n}\n"
}

#[test]
fn batched_entry_points_agree_with_the_oracle_item_by_item() {
    let fns = batched_functions();
    let mut r = rng(5);
    let items = 7; // not a multiple of any vector width: the loop's remainder runs too
    let mut inputs: Vec<Vec<Vec<HostArray>>> = fns
        .iter()
        .map(|f| {
            let shared: Vec<HostArray> =
                f.inputs().iter().map(|a| random(&mut r, &a.shape, a.dtype, -2.0, 2.0)).collect();
            (0..items)
                .map(|_| {
                    let mut args = shared.clone();
                    let a = &f.inputs()[0];
                    args[0] = random(&mut r, &a.shape, a.dtype, -2.0, 2.0);
                    args
                })
                .collect()
        })
        .collect();
    // One pendulum swings far (3e9 rad): its batch reruns with the exact sine and cosine.
    let mut far = inputs[0][3][0].to_f64_vec();
    far[0] = 3e9;
    inputs[0][3][0] = HostArray::F64(anvil::ndarray::Array1::from(far).into_dyn());
    let dir = std::env::temp_dir().join(format!("anvil_cpp_batch_{}", std::process::id()));
    let refs: Vec<&dyn ModuleItem> = fns.iter().map(|f| f as &dyn ModuleItem).collect();
    let (_, cpp) = generate_module_with_constants("batchmod", &refs, &[], &dir).unwrap();
    let source = std::fs::read_to_string(cpp).unwrap();
    for (name, batched) in [("pendulum", true), ("narrow", true), ("wide", false)] {
        let body = &source[source.find(&format!("namespace {name} {{")).unwrap()..];
        let body = &body[..body.find(&format!("}}  // namespace {name}")).unwrap()];
        assert_eq!(body.contains("kernel0_batch("), batched, "{name}: one loop over the items iff straight-line");
        assert_eq!(
            body.contains("_exact("),
            name != "narrow",
            "{name}: a rerun with the exact sine and cosine iff doubles"
        );
    }
    std::fs::write(dir.join("main.cpp"), batch_harness("batchmod", &fns, &inputs)).unwrap();
    let mut builds: Vec<(&str, Vec<&str>)> = vec![("g++", vec![])];
    // The JIT's flags: vectorised across items, sines and cosines from libmvec.
    builds
        .push(("g++", vec!["-O3", "-march=native", "-fopenmp-simd", "-DANVIL_OMP_SIMD", "-DANVIL_LIBMVEC", "-lmvec"]));
    if Command::new("clang++").arg("--version").output().is_ok_and(|o| o.status.success()) {
        builds.push(("clang++", vec!["-O2", "-fopenmp-simd", "-DANVIL_OMP_SIMD"]));
    }
    for (compiler, flags) in builds {
        let stdout = compile_and_run_with(compiler, &dir, "batchmod", &flags);
        let lines: Vec<&str> = stdout.lines().collect();
        let mut line = 0;
        for (f, items) in fns.iter().zip(&inputs) {
            let want: Vec<Vec<HostArray>> = items.iter().map(|ins| f.eval_dyn(ins).unwrap()).collect();
            for k in 0..f.outputs().len() {
                for (item, w) in want.iter().enumerate() {
                    let mut words = lines[line].split_whitespace();
                    line += 1;
                    assert_eq!((words.next(), words.next()), (Some(f.name()), Some(k.to_string().as_str())));
                    let got: Vec<f64> = words.map(|v| v.parse().unwrap()).collect();
                    let got = HostArray::F64(anvil::ndarray::ArrayD::from_shape_vec(w[k].shape(), got).unwrap());
                    let rtol = if f.outputs()[k].dtype == DType::F32 { 2e-6 } else { 1e-13 };
                    let what = format!("{compiler} {flags:?}: {} output {k}, item {item}", f.name());
                    assert_close(&what, &got, &HostArray::F64(w[k].to_f64()), rtol);
                }
            }
        }
        assert_eq!(line, lines.len(), "every printed output was checked");
    }
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Captured tables reach the workspace intact whatever the compiler makes of the copy: g++
/// 12 targeting AVX-512 (`-march=native` on such a host) folds a `memcpy` of a constant
/// table into vector constants and builds some wrongly (GCC PR target/108599: a 32- or
/// 64-byte chunk of repeated values followed by zeros, as in Jacobian seed tables). The
/// module copies its tables element by element through a volatile view instead.
#[test]
fn captured_tables_arrive_intact_when_compiled_for_the_host_cpu() {
    // Tables of under 1 kB (GCC expands longer copies as calls to memcpy) that the kernels
    // gather from (so they are workspace buffers, not literals): the report's 0/1 seed
    // table of 60 doubles (entries 58 and 59 arrived as 1), and one whose every 32-byte
    // chunk is {v, v, 0, 0}.
    let n = 60;
    let seeds: Vec<f64> = (0..n).map(|i| if i % 7 == 0 || i == 57 { 1.0 } else { 0.0 }).collect();
    let chunks: Vec<f64> = (0..n).map(|i| if i % 4 < 2 { 2.5 } else { 0.0 }).collect();
    let (seeds, chunks) = (
        Tensor::from_array(&anvil::ndarray::Array1::from(seeds)),
        Tensor::from_array(&anvil::ndarray::Array1::from(chunks)),
    );
    let f = NumericalFunction::new("tables", |[i]| (seeds.take(&i), chunks.take(&i)), [Arg::with_dtype(n, DType::I64)])
        .unwrap();
    assert_eq!(f.program().constants().count(), 2, "both tables are in the workspace");
    let inputs = vec![vec![HostArray::I64(anvil::ndarray::Array1::from_iter(0..n as i64).into_dyn())]];
    let dir = std::env::temp_dir().join(format!("anvil_cpp_tables_{}", std::process::id()));
    let fns = [f];
    let refs: Vec<&dyn ModuleItem> = fns.iter().map(|f| f as &dyn ModuleItem).collect();
    generate_module_with_constants("tablemod", &refs, &[], &dir).unwrap();
    std::fs::write(dir.join("main.cpp"), harness("tablemod", &fns, &inputs)).unwrap();
    // Without sanitizers: AddressSanitizer intercepts memcpy, so GCC leaves it a call.
    for opt in ["-O2", "-O3"] {
        let exe = dir.join(format!("tables{opt}"));
        let out = Command::new("g++")
            .args(["-std=c++17", opt, "-march=native", "-Wall", "-Wextra", "-Werror"])
            .args([dir.join("main.cpp"), dir.join("tablemod.cpp")])
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("run g++");
        assert!(out.status.success(), "g++ rejected the module:\n{}", String::from_utf8_lossy(&out.stderr));
        let run = Command::new(&exe).output().expect("run the harness");
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        check_output(&String::from_utf8(run.stdout).unwrap(), &fns, &inputs);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

//! anvil in one page: trace functions, call them through the JIT, write a C++ module and
//! build a small C++ program against it.
//!
//! Run with `cargo run --release --example quickstart`.

use anvil::ndarray::{array, Array1, Array2};
use anvil::{generate_module, Arg, NumericalFunction, Tensor};
use std::process::Command;

fn main() -> anvil::Result<()> {
    // 1. A scalar cost: the whole expression fuses into one loop.
    let energy = NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(1024)])?;
    let x = Array1::linspace(0.0, 1.0, 1024).into_dyn();
    let native = energy.call(&[x.view()])?;
    let reference = energy.eval(&[x.view()])?;
    println!("energy(x)            = {:.12} (interpreter: {:.12})", native[0].sum(), reference[0].sum());

    // 2. Captured constants and several outputs: a tiny neural-network layer.
    let w = Tensor::from_array(&Array2::from_shape_fn((3, 4), |(i, j)| 0.1 * (i as f64 + 1.0) * (j as f64 - 1.5)));
    let b = Tensor::from_array(&array![0.1, -0.2, 0.3]);
    let layer = NumericalFunction::new(
        "layer",
        |[x]| {
            let h = (w.matmul(&x) + &b).tanh();
            (h.clone(), h.square().sum())
        },
        [Arg::new(4)],
    )?;
    let out = layer.call(&[array![1.0, 2.0, 3.0, 4.0].into_dyn().view()])?;
    println!("layer(x)             = {} (|h|^2 = {:.6})", out[0], out[1].sum());

    // 3. Errors are values: a shape mistake names the op, the shapes and this line.
    let bad = NumericalFunction::new("bad", |[x, y]| x.matmul(&y), [Arg::new([2, 3]), Arg::new([2, 3])]);
    println!("a shape mistake      : {}", bad.unwrap_err());

    // 4. AOT: write a C++ module and compile a program against it.
    let dir = std::env::temp_dir().join("anvil_quickstart");
    let (hpp, cpp) = generate_module("quickstart", &[&energy, &layer], &dir)?;
    println!("wrote                : {} and {}", hpp.display(), cpp.display());
    let main_cpp = dir.join("main.cpp");
    std::fs::write(
        &main_cpp,
        r#"#include "quickstart.hpp"
#include <cstdio>

int main() {
  double x[4] = {1.0, 2.0, 3.0, 4.0};
  layer::OUT0_t h = layer::OUT0_t::alloc();
  layer::OUT1_t norm = layer::OUT1_t::alloc();
  layer::WS_t ws = layer::init_ws();
  layer::call(layer::IN0_t{x}, h, norm, ws);
  std::printf("C++ layer(x)         = [%.6f, %.6f, %.6f] (|h|^2 = %.6f)\n", h[0], h[1], h[2], norm[0]);
  layer::free_ws(ws);
  h.free();
  norm.free();
  return 0;
}
"#,
    )
    .map_err(|e| anvil::Error::Io { action: "write", path: main_cpp.clone(), message: e.to_string() })?;
    let exe = dir.join("quickstart_demo");
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-std=c++17", "-O2", "-Wall", "-Wextra"])
        .arg(&main_cpp)
        .arg(&cpp)
        .arg("-o")
        .arg(&exe)
        .status();
    match status {
        Ok(s) if s.success() => {
            let out = Command::new(&exe).output().expect("run the demo program");
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
        _ => println!("(no C++ compiler to build the AOT demo; run scripts/setup.sh)"),
    }
    Ok(())
}

//! Writes a reference C++ module (used by the Python tests to check that Python and Rust
//! generate the same files for the same functions).
//!
//! `cargo run --example reference_module -- <output directory>`

use anvil::ndarray::array;
use anvil::{ad, generate_module_with_constants, Arg, CodegenIntConstant, NumericalFunction, Tensor};

fn main() -> anvil::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "reference_module".into());
    let energy = NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(8)])?;
    let a = Tensor::from_array(&array![[1.0, 2.0], [3.0, 4.0]]);
    let affine = NumericalFunction::new("affine", |[x]| (a.matmul(&x) + 1.0, x.sum()), [Arg::new(2)])?;
    let residual = NumericalFunction::new(
        "residual",
        |[x]| {
            let p = x.pad(&[(1, 1)]);
            p.shrink(&[(0, 6)]) - &x * 2.0 + p.shrink(&[(2, 8)]) + x.square()
        },
        [Arg::new(6)],
    )?;
    let jac = ad::spjacobian(&residual)?;
    let n = CodegenIntConstant::new("N", 3)?;
    let nn = CodegenIntConstant::from_expr("NN", &(&n * 2))?;
    let (hpp, cpp) = generate_module_with_constants("reference", &[&energy, &affine, &jac], &[nn], &dir)?;
    println!("{}\n{}", hpp.display(), cpp.display());
    Ok(())
}

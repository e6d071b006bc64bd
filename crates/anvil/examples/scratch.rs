use anvil::*;
fn main() -> Result<()> {
    let n = 1000;
    let f = NumericalFunction::new(
        "rosen",
        move |[x]| {
            let (a, b) = (x.shrink(&[(0, n - 1)]), x.shrink(&[(1, n)]));
            ((&b - a.square()).square() * 100.0 + (1.0 - &a).square()).sum()
        },
        [Arg::new(n)],
    )?;
    let s = ad::sphessian(&f)?;
    let p = s.program();
    println!("kernels {} ws {}", p.kernels.len(), p.workspace_size);
    let src = s.jit_source();
    let start = src.find("void kernel0").unwrap();
    println!("{}", &src[start..]);
    Ok(())
}

//! Loop order of reductions: which kernels accumulate across their innermost output loop.
//!
//! A reduction is built as an inner loop under the output loops, with one scalar
//! accumulator. When its reads are strided along its own loop (a column of a row-major
//! matrix: `Wᵀ·v`, the reverse mode of a matrix product) but contiguous along the kernel's
//! innermost output loop, that order makes every read a cache-unfriendly stride and every
//! sum a dependent chain. Interchanged, each reduction accumulates into a local array along
//! the output loop (a tile of it at a time), its own loops outside: the innermost loop reads unit-stride and runs in
//! vector lanes, and the code after the reductions (bias, `tanh`, a product with a
//! derivative) runs in a loop of its own over the arrays. Each element still sums its terms
//! in the loop's order, so results equal the reference interpreter's.
//!
//! Input and output: the kernels, with [`Kernel::accumulate_across`] set where this pays.
//!
//! ```
//! use anvil::{Tensor, DType, internals::lower::lower};
//! let (w, v) = (Tensor::input(0, [64, 48], DType::F64), Tensor::input(1, 64, DType::F64));
//! let y = w.transpose().matmul(&v).tanh(); // sums down the columns of w
//! let program = lower(&[y.node().unwrap().clone()], &[(DType::F64, vec![64, 48]), (DType::F64, vec![64])]);
//! assert_eq!(program.kernels[0].accumulate_across, Some(0));
//! ```

use super::kernel::{Expr, ExprId, Kernel};
use super::IndexExpr;

/// Most elements of the local array a reduction accumulates into (it lives on the stack):
/// a longer output loop is cut into tiles of this length, each accumulated in turn.
pub const ACROSS_TILE: usize = 2048;

/// Sets [`Kernel::accumulate_across`] on every kernel of `kernels` where it pays.
pub fn order_reductions(mut kernels: Vec<Kernel>) -> Vec<Kernel> {
    for kernel in &mut kernels {
        kernel.accumulate_across = accumulation_axis(kernel);
    }
    kernels
}

/// The output loop variable `kernel`'s reductions should accumulate across, if any: its
/// innermost output loop (tiled if longer than [`ACROSS_TILE`]), when every reduction that depends on it reads unit-stride (or
/// not at all) along it, and one of them reads with another stride along its own innermost
/// loop. Reductions nested in reductions, and gathers, keep the plain order.
pub fn accumulation_axis(kernel: &Kernel) -> Option<usize> {
    if kernel.shape.is_empty() || kernel.scatter.is_some() || kernel.items {
        return None;
    }
    let across = kernel.innermost_loop()?;
    let mut pays = false;
    for expr in &kernel.exprs {
        let Expr::Reduce { vars, body, .. } = expr else { continue };
        let (loads, bounds) = indices_under(kernel, *body)?;
        if !loads.iter().chain(&bounds).any(|ix| mentions(ix, across)) {
            continue; // computed outside the output loop anyway
        }
        let own = *vars.last()?;
        for index in &loads {
            if !matches!(stride(index, across), Some(0 | 1)) {
                return None;
            }
            pays |= !matches!(stride(index, own), Some(0 | 1));
        }
    }
    pays.then_some(across)
}

/// The index expressions of the loads, and those of the bounds tests, under `root`; `None`
/// if a reduction or gather is among them.
fn indices_under(kernel: &Kernel, root: ExprId) -> Option<(Vec<IndexExpr>, Vec<IndexExpr>)> {
    let (mut loads, mut bounds) = (Vec::new(), Vec::new());
    for e in kernel.cone(root) {
        match &kernel.exprs[e] {
            Expr::Reduce { .. } | Expr::Gather { .. } => return None,
            Expr::Load { index, .. } => loads.push(index.clone()),
            Expr::InBounds(tests) => bounds.extend(tests.iter().map(|b| b.expr.clone())),
            _ => {}
        }
    }
    Some((loads, bounds))
}

/// The coefficient of loop variable `v` in `index`, if it appears only as a plain term.
fn stride(index: &IndexExpr, v: usize) -> Option<i64> {
    index.split_var(v).map(|(c, _)| c)
}

/// True if `index` depends on loop variable `v`.
fn mentions(index: &IndexExpr, v: usize) -> bool {
    let mut vars = Vec::new();
    index.vars(&mut vars);
    vars.contains(&v)
}

//! Layout of captured constants: a constant matrix read along its rows by a reduction
//! whose kernel's innermost output loop walks down its columns is stored transposed.
//!
//! `X·Wᵀ` over a batch (every layer of a vmapped network) reads `W[j, k]` with the
//! reduction loop `k` along a row and the output loop `j` down a column. As built, each
//! output element is a dot product: a short vectorised reduction per element, summed in a
//! reassociated order. With `W` stored as `Wᵀ` (once, when the workspace is filled: it is a
//! constant), the reads are unit-stride along `j`, and [`super::interchange`] accumulates
//! across `j` instead: one vectorised multiply-add per `k` over all of a row's outputs,
//! each element summed in the reference interpreter's order.
//!
//! Input and output: the kernels (with the new constant buffers added to the program's).
//! Only where the interchange then applies, the kernel has other output loops (a batch
//! reading the constant again and again), and the output loop is at least [`MIN_ACROSS`]
//! long (a shorter one fills less than two vector registers of `f64`).
//!
//! ```
//! use anvil::{Tensor, DType, ndarray::Array2, internals::lower::{lower, BufferKind}};
//! let w = Tensor::from_array(&Array2::from_shape_fn((64, 16), |(j, k)| (j * 16 + k) as f64));
//! let x = Tensor::input(0, [256, 16], DType::F64);
//! let y = x.matmul(&w.transpose()).tanh(); // a batch of 256 rows times Wᵀ
//! let program = lower(&[y.node().unwrap().clone()], &[(DType::F64, vec![256, 16])]);
//! let transposed = program.buffers.iter().any(|b| matches!(b.kind, BufferKind::Constant(_)) && b.shape == [16, 64]);
//! assert!(transposed);
//! assert_eq!(program.kernels[0].accumulate_across, Some(1));
//! ```

use super::interchange::accumulation_axis;
use super::kernel::{Buffer, BufferId, BufferKind, Expr, Kernel};
use super::IndexExpr;
use crate::array::{with_host_array, HostArray};
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;
use std::sync::Arc;

/// Shortest output loop worth a transposed copy (two AVX-512 registers of `f64`).
pub const MIN_ACROSS: usize = 16;

/// A constant read as a matrix: element `(j, k)` is `buffer[start + row_stride·j + k]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RowView {
    buffer: BufferId,
    start: i64,
    row_stride: i64,
    rows: usize,
    columns: usize,
}

/// The kernels, each one whose reductions would accumulate across its innermost output
/// loop if a constant it reads row by row were stored transposed, reading that transposed
/// copy (added to `buffers`; one per constant and view, shared by the kernels using it).
pub fn transpose_constants(mut kernels: Vec<Kernel>, buffers: &mut Vec<Buffer>) -> Vec<Kernel> {
    let mut copies: HashMap<RowView, BufferId> = HashMap::new();
    for kernel in &mut kernels {
        if let Some(rewritten) = with_transposed_constants(kernel, buffers, &mut copies) {
            *kernel = rewritten;
        }
    }
    kernels
}

/// `kernel` reading transposed copies of the constants it reads row by row, if that makes
/// it accumulate across its innermost output loop.
fn with_transposed_constants(
    kernel: &Kernel,
    buffers: &mut Vec<Buffer>,
    copies: &mut HashMap<RowView, BufferId>,
) -> Option<Kernel> {
    if kernel.shape.is_empty() || kernel.items || kernel.scatter.is_some() || accumulation_axis(kernel).is_some() {
        return None;
    }
    let across = kernel.innermost_loop()?;
    // A batch: other output loops read the same constant again (a single product reads
    // each element once, and its dot products are as fast).
    let batched = kernel.shape.iter().enumerate().any(|(d, &n)| d != across && n > 1);
    if kernel.extents[across] < MIN_ACROSS || !batched {
        return None;
    }
    let mut rewritten = kernel.clone();
    let mut planned: Vec<RowView> = Vec::new(); // copies to make, in buffer order
    for expr in &kernel.exprs {
        let Expr::Reduce { vars, body, .. } = expr else { continue };
        let Some(&own) = vars.last() else { continue };
        for load in kernel.cone(*body) {
            let Expr::Load { buffer, index, len, dtype } = &kernel.exprs[load] else { continue };
            if !matches!(buffers[*buffer].kind, BufferKind::Constant(_)) {
                continue;
            }
            let Some(view) = row_view(*buffer, index, *len, across, own, &kernel.extents) else { continue };
            let copy = match copies.get(&view) {
                Some(&id) => id,
                None => buffers.len() + position_or_push(&mut planned, view),
            };
            let index = IndexExpr::var(own).scale(view.rows as i64).add(&IndexExpr::var(across));
            rewritten.exprs[load] = Expr::Load { buffer: copy, index, len: view.rows * view.columns, dtype: *dtype };
        }
    }
    if rewritten.exprs == kernel.exprs || accumulation_axis(&rewritten).is_none() {
        return None;
    }
    for view in planned {
        copies.insert(view, buffers.len());
        let source = &buffers[view.buffer];
        let BufferKind::Constant(data) = &source.kind else { unreachable!("only constants are viewed") };
        let data = transposed(data, view);
        buffers.push(Buffer {
            kind: BufferKind::Constant(Arc::new(data)),
            dtype: source.dtype,
            shape: vec![view.columns, view.rows],
        });
    }
    Some(rewritten)
}

/// The index of `view` in `planned`, pushing it if new.
fn position_or_push(planned: &mut Vec<RowView>, view: RowView) -> usize {
    planned.iter().position(|&v| v == view).unwrap_or_else(|| {
        planned.push(view);
        planned.len() - 1
    })
}

/// The matrix view of a load at `index` = `start + row_stride·j + k` (`j` the output loop
/// `across`, `k` the reduction loop `own`), if that is its form, its row stride is not 1
/// (else it is read unit-stride already) and every element it reads is in the buffer.
fn row_view(
    buffer: BufferId,
    index: &IndexExpr,
    len: usize,
    across: usize,
    own: usize,
    extents: &[usize],
) -> Option<RowView> {
    let (row_stride, rest) = index.split_var(across)?;
    let (unit, rest) = rest.split_var(own)?;
    let start = rest.as_constant()?;
    let (rows, columns) = (extents[across], extents[own]);
    if unit != 1 || matches!(row_stride, 0 | 1) || rows == 0 || columns == 0 {
        return None;
    }
    let last_row = row_stride * (rows as i64 - 1);
    let (lowest, highest) = (start + last_row.min(0), start + last_row.max(0) + columns as i64 - 1);
    (lowest >= 0 && highest < len as i64).then_some(RowView { buffer, start, row_stride, rows, columns })
}

/// The `columns × rows` matrix whose element `(k, j)` is the viewed element `(j, k)`.
fn transposed(data: &HostArray, view: RowView) -> HostArray {
    with_host_array!(data, a => {
        let flat: Vec<_> = a.iter().copied().collect();
        let element = |k: usize, j: usize| flat[(view.start + view.row_stride * j as i64 + k as i64) as usize];
        let values = (0..view.columns).flat_map(|k| (0..view.rows).map(move |j| (k, j))).map(|(k, j)| element(k, j)).collect();
        HostArray::from(ArrayD::from_shape_vec(IxDyn(&[view.columns, view.rows]), values).expect("the shape holds the values"))
    })
}

//! The verifier of lowered programs: the invariants the renderer and the generated code rely
//! on, checked between the lowering's stages in debug builds (and so in every test).
//!
//! - **Well-formed kernels.** Operands come before their users, loop variables lie within
//!   the kernel's nest, loads name existing buffers with their length and type, stores and
//!   their values agree in type, and no kernel reads a buffer it writes (its pointers are
//!   `restrict`).
//! - **Written before read.** Every element of an intermediate or output is stored by a
//!   kernel before any kernel reads that buffer, and every output is complete at the end.
//!   Stores are enumerated point by point, each checked to lie inside its buffer; a kernel
//!   with more than [`COVERAGE_POINTS`] points × stores is checked by the bounds of its
//!   store indices instead (a store whose bounds span the buffer counts as covering it).
//! - **A sound workspace.** Every workspace buffer a kernel touches has an aligned offset
//!   inside the workspace, and buffers alive at the same time share no byte.
//!
//! ```
//! use anvil::{Tensor, DType, internals::lower::{lower, verify}};
//! let x = Tensor::input(0, 8, DType::F64);
//! let program = lower(&[x.sin().node().unwrap().clone()], &[(DType::F64, vec![8])]);
//! assert_eq!(verify::verify(&program), Ok(()));
//! ```

use super::kernel::{Buffer, BufferId, BufferKind, Expr, Kernel, Program, Store};
use super::workspace::ALIGNMENT;

/// Most loop points × stores of one kernel whose written elements are enumerated.
pub const COVERAGE_POINTS: usize = 1 << 20;

/// Checks a whole program: its kernels ([`verify_kernels`]) and its workspace layout.
pub fn verify(program: &Program) -> Result<(), String> {
    verify_kernels(&program.buffers, &program.kernels)?;
    verify_workspace(program)
}

/// Checks `kernels`, run in order over `buffers`: each well formed, each buffer written
/// before it is read, every output complete.
pub fn verify_kernels(buffers: &[Buffer], kernels: &[Kernel]) -> Result<(), String> {
    let mut written: Vec<Vec<bool>> =
        buffers.iter().map(|b| if is_computed(b) { vec![false; b.numel()] } else { Vec::new() }).collect();
    let mut complete: Vec<bool> = buffers.iter().map(|b| !is_computed(b) || b.numel() == 0).collect();
    for (k, kernel) in kernels.iter().enumerate() {
        let at = |message: String| format!("kernel {k}: {message}");
        check_kernel(buffers, kernel).map_err(at)?;
        if let Some(b) = kernel.inputs().into_iter().find(|&b| !complete[b]) {
            return Err(at(format!("reads buffer {b} before all of it is written")));
        }
        mark_stores(buffers, kernel, &mut written).map_err(at)?;
        for &b in &kernel.outputs {
            complete[b] = written[b].iter().all(|&w| w);
        }
    }
    match buffers.iter().enumerate().find(|(b, buffer)| matches!(buffer.kind, BufferKind::Output(_)) && !complete[*b]) {
        Some((b, _)) => Err(format!("output buffer {b} is not completely written")),
        None => Ok(()),
    }
}

/// Buffers that kernels write (the others exist before the call).
fn is_computed(buffer: &Buffer) -> bool {
    matches!(buffer.kind, BufferKind::Output(_) | BufferKind::Intermediate)
}

/// The checks that concern one kernel alone.
fn check_kernel(buffers: &[Buffer], kernel: &Kernel) -> Result<(), String> {
    let outs = kernel.shape.len();
    if kernel.extents.len() < outs || kernel.extents[..outs] != kernel.shape[..] {
        return Err(format!("extents {:?} do not start with the shape {:?}", kernel.extents, kernel.shape));
    }
    if kernel.items && outs != 1 {
        return Err("a loop over items has one loop".into());
    }
    if let Some(v) = kernel.accumulate_across {
        if kernel.innermost_loop() != Some(v) {
            return Err(format!("reductions accumulate across loop {v}, not the innermost output loop"));
        }
        if kernel.scatter.is_some() || kernel.items {
            return Err("a scatter or a loop over items accumulates across no loop".into());
        }
    }
    for (id, expr) in kernel.exprs.iter().enumerate() {
        check_expr(buffers, kernel, expr).map_err(|m| format!("expression {id}: {m}"))?;
        if let Some(o) = expr.operands().into_iter().find(|&o| o >= id) {
            return Err(format!("expression {id} reads expression {o}, which does not come before it"));
        }
    }
    for store in &kernel.stores {
        let buffer = buffers.get(store.buffer).ok_or_else(|| format!("stores to missing buffer {}", store.buffer))?;
        let value =
            kernel.exprs.get(store.value).ok_or_else(|| format!("stores missing expression {}", store.value))?;
        if !is_computed(buffer) {
            return Err(format!("stores to buffer {}, an input or a constant", store.buffer));
        }
        if value.dtype() != buffer.dtype {
            return Err(format!("stores a {:?} into buffer {} of {:?}", value.dtype(), store.buffer, buffer.dtype));
        }
    }
    let stored = Store::buffers(&kernel.stores);
    if stored != kernel.outputs {
        return Err(format!("writes buffers {stored:?} but lists {:?} as its outputs", kernel.outputs));
    }
    if let Some(b) = kernel.inputs().into_iter().find(|b| kernel.outputs.contains(b)) {
        return Err(format!("reads buffer {b}, which it writes"));
    }
    if let Some(scatter) = &kernel.scatter {
        let len = buffers[kernel.outputs[0]].numel();
        if kernel.stores.len() != 1 || scatter.len != len || scatter.index >= kernel.exprs.len() {
            return Err("a scatter-add has one store, into its whole output, at an index it computes".into());
        }
    }
    Ok(())
}

/// The checks of one expression of `kernel`.
fn check_expr(buffers: &[Buffer], kernel: &Kernel, expr: &Expr) -> Result<(), String> {
    let mut vars = Vec::new();
    match expr {
        Expr::Load { buffer, index, len, dtype } => {
            check_read(buffers, *buffer, *len, *dtype)?;
            index.vars(&mut vars);
        }
        Expr::Gather { buffer, len, dtype, .. } => check_read(buffers, *buffer, *len, *dtype)?,
        Expr::InBounds(bounds) => bounds.iter().for_each(|b| b.expr.vars(&mut vars)),
        Expr::Reduce { vars: reduced, .. } => {
            if let Some(v) = reduced.iter().find(|&&v| v < kernel.shape.len()) {
                return Err(format!("reduces over loop variable {v}, an output's"));
            }
            vars.extend(reduced);
        }
        _ => {}
    }
    match vars.into_iter().find(|&v| v >= kernel.extents.len()) {
        Some(v) => Err(format!("uses loop variable {v}, outside the nest of {} loops", kernel.extents.len())),
        None => Ok(()),
    }
}

fn check_read(buffers: &[Buffer], b: BufferId, len: usize, dtype: crate::dtype::DType) -> Result<(), String> {
    let buffer = buffers.get(b).ok_or_else(|| format!("reads missing buffer {b}"))?;
    if buffer.numel() != len || buffer.dtype != dtype {
        return Err(format!(
            "reads buffer {b} as {len} elements of {dtype:?}; it has {} of {:?}",
            buffer.numel(),
            buffer.dtype
        ));
    }
    Ok(())
}

/// Marks the elements `kernel` stores in `written`, checking each lies in its buffer.
fn mark_stores(buffers: &[Buffer], kernel: &Kernel, written: &mut [Vec<bool>]) -> Result<(), String> {
    if kernel.scatter.is_some() {
        // The output is zeroed, then added into.
        written[kernel.outputs[0]].fill(true);
        return Ok(());
    }
    let points: usize = kernel.shape.iter().product();
    if points.saturating_mul(kernel.stores.len()) > COVERAGE_POINTS {
        for store in &kernel.stores {
            let (lo, hi) = store.index.bounds(&kernel.extents);
            let len = buffers[store.buffer].numel() as i64;
            if lo < 0 || hi >= len {
                return Err(format!("stores at {lo}..={hi} in buffer {} of {len} elements", store.buffer));
            }
            if (lo, hi) == (0, len - 1) {
                written[store.buffer].fill(true);
            }
        }
        return Ok(());
    }
    let mut point = vec![0i64; kernel.extents.len()];
    for _ in 0..points {
        for store in &kernel.stores {
            let i = store.index.eval(&point);
            let cell = usize::try_from(i).ok().and_then(|i| written[store.buffer].get_mut(i));
            let Some(cell) = cell else {
                return Err(format!("stores at {i}, outside buffer {} at point {point:?}", store.buffer));
            };
            *cell = true;
        }
        next_point(&mut point, &kernel.shape);
    }
    Ok(())
}

/// Advances `point` to the next point of the row-major nest over `shape`.
fn next_point(point: &mut [i64], shape: &[usize]) {
    for d in (0..shape.len()).rev() {
        point[d] += 1;
        if point[d] < shape[d] as i64 {
            return;
        }
        point[d] = 0;
    }
}

/// The workspace checks: offsets where needed, aligned, inside the workspace, and disjoint
/// while alive.
fn verify_workspace(program: &Program) -> Result<(), String> {
    let (buffers, kernels) = (&program.buffers, &program.kernels);
    if program.offsets.len() != buffers.len() {
        return Err(format!("{} offsets for {} buffers", program.offsets.len(), buffers.len()));
    }
    let last = kernels.len().saturating_sub(1);
    let mut alive: Vec<Option<(usize, usize)>> = vec![None; buffers.len()];
    for (k, kernel) in kernels.iter().enumerate() {
        for b in kernel.outputs.iter().copied().chain(kernel.inputs()) {
            let span = match buffers[b].kind {
                BufferKind::Constant(_) => (0, last),
                BufferKind::Intermediate => alive[b].map_or((k, k), |(first, _)| (first, k)),
                BufferKind::Input(_) | BufferKind::Output(_) => continue,
            };
            alive[b] = Some(span);
        }
    }
    let mut blocks = Vec::new();
    for (b, buffer) in buffers.iter().enumerate() {
        match (buffer.in_workspace(), program.offsets[b], alive[b]) {
            (false, Some(_), _) => return Err(format!("buffer {b} is the caller's but has a workspace offset")),
            (true, None, Some(_)) => return Err(format!("buffer {b} is used but has no workspace offset")),
            (true, Some(offset), _) => {
                let end = offset + buffer.nbytes();
                if offset % ALIGNMENT != 0 || end > program.workspace_size {
                    return Err(format!(
                        "buffer {b} at bytes {offset}..{end} of a workspace of {} (alignment {ALIGNMENT})",
                        program.workspace_size
                    ));
                }
                if let (Some(span), true) = (alive[b], end > offset) {
                    blocks.push((offset, end, span, b));
                }
            }
            _ => {}
        }
    }
    blocks.sort_unstable();
    for (i, &(_, end, (first, last), b)) in blocks.iter().enumerate() {
        let mut overlapping = blocks[i + 1..].iter().take_while(|&&(start, ..)| start < end);
        if let Some(&(.., c)) = overlapping.find(|&&(_, _, (f, l), _)| f <= last && first <= l) {
            return Err(format!("buffers {b} and {c} share workspace bytes while both are alive"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::Literal;
    use crate::lower::IndexExpr;

    fn buffer(kind: BufferKind, n: usize) -> Buffer {
        Buffer { kind, dtype: DType::F64, shape: vec![n] }
    }

    /// `out[i] = src[i]` over 4 points.
    fn copy(src: BufferId, out: BufferId) -> Kernel {
        let load = Expr::Load { buffer: src, index: IndexExpr::var(0), len: 4, dtype: DType::F64 };
        Kernel {
            outputs: vec![out],
            stores: vec![Store { buffer: out, index: IndexExpr::var(0), value: 0 }],
            shape: vec![4],
            extents: vec![4],
            exprs: vec![load],
            scatter: None,
            items: false,
            accumulate_across: None,
        }
    }

    fn program(kernels: Vec<Kernel>, offsets: Vec<Option<usize>>, size: usize) -> Program {
        let buffers = vec![
            buffer(BufferKind::Input(0), 4),
            buffer(BufferKind::Output(0), 4),
            buffer(BufferKind::Intermediate, 4),
            buffer(BufferKind::Intermediate, 4),
        ];
        Program { buffers, kernels, offsets, workspace_size: size }
    }

    #[test]
    fn a_chain_through_two_intermediates_verifies() {
        let p = program(vec![copy(0, 2), copy(2, 3), copy(3, 1)], vec![None, None, Some(0), Some(64)], 128);
        assert_eq!(verify(&p), Ok(()));
        // Buffer 2 is dead once buffer 3 is written from it... but not before: no sharing.
        let shared = program(vec![copy(0, 2), copy(2, 3), copy(3, 1)], vec![None, None, Some(0), Some(0)], 64);
        assert!(verify(&shared).unwrap_err().contains("share workspace bytes"));
    }

    #[test]
    fn reading_before_writing_is_reported() {
        let p = program(vec![copy(2, 1), copy(0, 2)], vec![None, None, Some(0), None], 64);
        assert_eq!(verify(&p).unwrap_err(), "kernel 0: reads buffer 2 before all of it is written");
        let mut half = copy(0, 2);
        half.shape = vec![2];
        half.extents = vec![2];
        let p = program(vec![half, copy(2, 1)], vec![None, None, Some(0), None], 64);
        assert!(verify(&p).unwrap_err().contains("reads buffer 2 before"));
        let p = program(vec![copy(0, 2)], vec![None, None, Some(0), None], 64);
        assert_eq!(verify(&p).unwrap_err(), "output buffer 1 is not completely written");
    }

    #[test]
    fn malformed_kernels_are_reported() {
        let mut outside = copy(0, 1);
        outside.stores[0].index = IndexExpr::var(0).add_const(1);
        assert!(verify_kernels(&program(vec![], vec![], 0).buffers, &[outside]).unwrap_err().contains("stores at 4"));
        let mut in_place = copy(0, 1);
        in_place.exprs[0] = Expr::Load { buffer: 1, index: IndexExpr::var(0), len: 4, dtype: DType::F64 };
        assert!(verify_kernels(&program(vec![], vec![], 0).buffers, &[in_place])
            .unwrap_err()
            .contains("which it writes"));
        let mut wrong_type = copy(0, 1);
        wrong_type.exprs.push(Expr::Const(Literal::Bool(true), DType::Bool));
        wrong_type.stores[0].value = 1;
        assert!(verify_kernels(&program(vec![], vec![], 0).buffers, &[wrong_type])
            .unwrap_err()
            .contains("stores a Bool"));
        let mut misread = copy(0, 1);
        misread.exprs[0] = Expr::Load { buffer: 0, index: IndexExpr::var(1), len: 4, dtype: DType::F64 };
        assert!(verify_kernels(&program(vec![], vec![], 0).buffers, &[misread])
            .unwrap_err()
            .contains("loop variable 1"));
        let mut across_nothing = copy(0, 1);
        across_nothing.accumulate_across = Some(1);
        assert!(verify_kernels(&program(vec![], vec![], 0).buffers, &[across_nothing])
            .unwrap_err()
            .contains("not the innermost output loop"));
    }

    #[test]
    fn workspace_offsets_are_checked() {
        let kernels = || vec![copy(0, 2), copy(2, 1)];
        assert!(verify(&program(kernels(), vec![None, None, None, None], 64))
            .unwrap_err()
            .contains("no workspace offset"));
        assert!(verify(&program(kernels(), vec![None, None, Some(8), None], 64)).unwrap_err().contains("alignment"));
        assert!(verify(&program(kernels(), vec![None, None, Some(64), None], 64))
            .unwrap_err()
            .contains("workspace of 64"));
        assert!(verify(&program(kernels(), vec![Some(0), None, Some(0), None], 64)).unwrap_err().contains("caller's"));
    }
}

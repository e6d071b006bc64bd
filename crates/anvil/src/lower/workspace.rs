//! Workspace layout: byte offsets of constants and intermediates in one allocation.
//!
//! Constants that a kernel reads live for the whole call (the others, folded into the
//! kernels, get no space). An intermediate lives from the kernel that writes it
//! to the last kernel that reads it; afterwards its bytes are reused (first fit). Every
//! buffer starts on a 64-byte boundary (a cache line, and the widest vector register).

use super::kernel::{Buffer, Kernel};

/// Alignment of every workspace buffer, in bytes.
pub const ALIGNMENT: usize = 64;

/// Offsets of each workspace buffer (`None` for caller buffers and for constants no kernel
/// reads) and the total size.
pub fn workspace_layout(buffers: &[Buffer], kernels: &[Kernel]) -> (Vec<Option<usize>>, usize) {
    layout(buffers, kernels, true, ALIGNMENT)
}

/// Offsets of the intermediates alone, each on an `alignment`-byte boundary, and the total
/// size: the memory of one GPU thread, which runs the whole program on its items (the
/// constants are one region all threads share).
pub fn scratch_layout(buffers: &[Buffer], kernels: &[Kernel], alignment: usize) -> (Vec<Option<usize>>, usize) {
    layout(buffers, kernels, false, alignment)
}

/// The first-fit layout of the intermediates (and, with `constants`, of the constants
/// kernels read, first and for the whole call).
fn layout(buffers: &[Buffer], kernels: &[Kernel], constants: bool, alignment: usize) -> (Vec<Option<usize>>, usize) {
    let mut offsets = vec![None; buffers.len()];
    let mut live: Vec<(usize, usize, usize)> = Vec::new(); // (offset, size, buffer)
    let mut size = 0;
    let mut last_use = vec![None; buffers.len()];
    for (k, kernel) in kernels.iter().enumerate() {
        for b in kernel.inputs() {
            last_use[b] = Some(k);
        }
    }
    for (b, buffer) in buffers.iter().enumerate() {
        if constants && matches!(buffer.kind, super::kernel::BufferKind::Constant(_)) && last_use[b].is_some() {
            offsets[b] = Some(allocate(&mut live, &mut size, buffer.nbytes(), b, alignment));
        }
    }
    for (k, kernel) in kernels.iter().enumerate() {
        for &out in &kernel.outputs {
            if matches!(buffers[out].kind, super::kernel::BufferKind::Intermediate) && offsets[out].is_none() {
                offsets[out] = Some(allocate(&mut live, &mut size, buffers[out].nbytes(), out, alignment));
            }
        }
        live.retain(|&(_, _, b)| {
            let dead =
                matches!(buffers[b].kind, super::kernel::BufferKind::Intermediate) && last_use[b].unwrap_or(0) <= k;
            !dead
        });
    }
    (offsets, size)
}

/// First-fit: the lowest aligned offset where `nbytes` fit between live blocks.
fn allocate(
    live: &mut Vec<(usize, usize, usize)>,
    size: &mut usize,
    nbytes: usize,
    buffer: usize,
    alignment: usize,
) -> usize {
    live.sort_unstable();
    let mut offset = 0;
    for &(start, len, _) in live.iter() {
        if offset + nbytes <= start {
            break;
        }
        offset = (offset.max(start + len)).div_ceil(alignment) * alignment;
    }
    live.push((offset, nbytes, buffer));
    *size = (*size).max((offset + nbytes).div_ceil(alignment) * alignment);
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_reuses_freed_space() {
        let mut live = Vec::new();
        let mut size = 0;
        assert_eq!(allocate(&mut live, &mut size, 100, 0, ALIGNMENT), 0);
        assert_eq!(allocate(&mut live, &mut size, 10, 1, ALIGNMENT), 128);
        live.retain(|&(_, _, b)| b != 0);
        assert_eq!(allocate(&mut live, &mut size, 64, 2, ALIGNMENT), 0);
        assert_eq!(allocate(&mut live, &mut size, 64, 3, ALIGNMENT), 64);
        assert_eq!(size, 192);
    }
}

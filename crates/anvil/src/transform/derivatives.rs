//! Derivatives as graphs: gradients, dense and sparse Jacobians and Hessians of one tensor
//! with respect to another, composed from the [`super::jvp`], [`super::vjp`] and
//! [`super::vmap`] rewrites. Graph → graph; the functions users call (names, checks) are in
//! [`crate::ad`].

use super::bands::{jacobian_bands, Bands};
use super::coloring::{column_coloring, star_coloring, Coloring};
use super::jvp::jvp_nodes;
use super::sparsity::dependency_pattern;
use super::vjp::vjp_nodes;
use super::vmap::vmap_nodes;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::TraceId;
use crate::pattern::SparsityPattern;
use crate::tensor::Tensor;
use ndarray::{Array1, IxDyn};
use std::collections::{BTreeSet, HashMap};

/// The dtype a derivative with respect to (or of) a value of dtype `d` has.
pub fn float_of(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F64
    }
}

/// Zeros of the derivative dtype of `dtype`.
pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::full(shape.to_vec(), 0.0, float_of(dtype))
}

/// The gradient of the scalar `y` with respect to `x` (zeros where `y` does not depend on
/// `x`): reverse mode with cotangent 1.
pub fn gradient(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    let seed = Tensor::full(y.shape().to_vec(), 1.0, float_of(y.dtype()));
    let g = vjp_nodes(&[y.node()?.clone()], &[seed], &[x.node()?.clone()])?.remove(0);
    Ok(g.unwrap_or_else(|| zeros(x.shape(), x.dtype())))
}

/// `d y / d x` as a dense `(numel y × numel x)` matrix in the cheaper mode, with exact zeros
/// wherever the structure has them.
///
/// For small Jacobians (up to [`BOTH_MODES_MAX`] elements on either side) both modes are
/// built and the one with less work kept: the rule of thumb (forward when `x` is the
/// smaller) misses the constants, and for the 4×5 Jacobian of an RK4 step five forward
/// directions take 556 operations against 642 for four reverse sweeps. Larger ones follow
/// the rule (the other mode's identity seed would grow with the square of the larger side).
/// For small `x` (up to [`UNIT_DIRECTIONS_MAX`] elements) the forward directions are also
/// taken one unit direction at a time, as for [`hessian`], and kept if that is less work.
pub fn jacobian(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    let pattern = dependency_pattern(y.node()?, x.node()?)?;
    let dense = if x.numel().max(y.numel()) <= BOTH_MODES_MAX {
        let (forward, reverse) = (forward_jacobian(y, x)?, reverse_jacobian(y, x)?);
        if work(&forward)? <= work(&reverse)? {
            forward
        } else {
            reverse
        }
    } else if x.numel() <= y.numel() {
        forward_jacobian(y, x)?
    } else {
        reverse_jacobian(y, x)?
    };
    less_work_of(structural_zeros(&pattern, dense)?, y, x, &pattern)
}

/// The most elements of a Jacobian's input or output for which both modes are tried.
pub const BOTH_MODES_MAX: usize = 256;

/// The scalar operations computing `t` from its graph's leaves.
fn work(t: &Tensor) -> Result<usize> {
    Ok(crate::graph::toposort(std::slice::from_ref(t.node()?)).iter().map(|n| n.work()).sum())
}

/// The dense Hessian of the scalar `y` with respect to `x`: forward over reverse, with
/// exact zeros wherever the (symmetrized) structure has them. For small `x` (up to
/// [`UNIT_DIRECTIONS_MAX`] elements) the directions are taken one at a time as well as all at
/// once, and the form with less work kept: each unit direction, a zero-padded 1, gives every
/// element read from `x` a constant tangent, so the graph's rules drop each product and sum
/// with a zero tangent, which leaves the terms the direction's variable reaches (a fraction of
/// the work where the function reads `x` element by element), with the same arithmetic.
pub fn hessian(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    let g = gradient(y, x)?;
    let pattern = dependency_pattern(g.node()?, x.node()?)?.symmetrized();
    less_work_of(structural_zeros(&pattern, forward_jacobian(&g, x)?)?, &g, x, &pattern)
}

/// `batched`, the derivative of `y` with respect to `x` (zeros where `pattern` has none), or
/// the same derivative one unit direction at a time if `x` is small and that is less work,
/// within [`UNIT_DIRECTIONS_MAX_WORK`] operations.
fn less_work_of(batched: Tensor, y: &Tensor, x: &Tensor, pattern: &SparsityPattern) -> Result<Tensor> {
    if x.numel() > UNIT_DIRECTIONS_MAX {
        return Ok(batched);
    }
    let one_by_one = forward_unit_directions(y, x, pattern)?;
    let unrolled = work(&one_by_one)?;
    Ok(if unrolled <= UNIT_DIRECTIONS_MAX_WORK && unrolled < work(&batched)? { one_by_one } else { batched })
}

/// The most operations of a derivative written one unit direction at a time: twice a
/// straight-line program's budget ([`crate::LowerOptions`]). Its code is
/// all its operations (each direction's copy of what the direction reaches), which the
/// compiler takes faster than linearly in their number: the Hessian of acados' chain of
/// masses (21 states, two RK4 steps per stage) one direction at a time is 97k operations
/// against 169k batched, and did not compile in 10 minutes; batched, a loop over the
/// directions whose body is one direction's, its solver builds in 12 s.
pub const UNIT_DIRECTIONS_MAX_WORK: usize = 16384;

/// The most directions for which a derivative is also built one direction at a time.
pub const UNIT_DIRECTIONS_MAX: usize = 64;

/// Forward mode one unit direction at a time: `(numel y × numel x)`, zeros where `pattern`
/// has none. Each direction is a zero-padded 1, so the tangent of every element read from
/// `x` is a constant and the graph's rules drop each product and sum with a zero tangent:
/// what is left is the work that depends on the direction, with the arithmetic of the
/// batched form (whose seeds are data to its loop over the directions). Where a function
/// reads `x` element by element (a stage's dynamics), that is a fraction of the batched
/// work; where it computes with `x` whole, it is the same work and the batched form wins.
fn forward_unit_directions(y: &Tensor, x: &Tensor, pattern: &SparsityPattern) -> Result<Tensor> {
    let (m, n) = (y.numel(), x.numel());
    let dtype = float_of(y.dtype());
    let by_column = pattern.transpose();
    let columns = (0..n)
        .map(|j| {
            let rows = by_column.row(j);
            if rows.is_empty() {
                return Ok(Tensor::zeros([m]).cast(dtype));
            }
            let unit = Tensor::full([1], 1.0, float_of(x.dtype())).pad(&[(j, n - 1 - j)]).reshape(x.shape().to_vec());
            let column = jvp(y, x, &unit)?.flatten();
            Ok(match runs_mask(m, rows) {
                Some(mask) => mask.where_(column, 0.0),
                None => column,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Tensor::stack(&columns, 1))
}

/// The mask of `len` elements true at the increasing positions `at`, joined from its runs of
/// equal values (so that code generation decides it element by element, as it decides a
/// join), or None if it is true everywhere.
fn runs_mask(len: usize, at: &[usize]) -> Option<Tensor> {
    if at.len() == len {
        return None;
    }
    let mut inside = vec![false; len];
    for &i in at {
        inside[i] = true;
    }
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=len {
        if i == len || inside[i] != inside[start] {
            runs.push(Tensor::full([i - start], if inside[start] { 1.0 } else { 0.0 }, DType::Bool));
            start = i;
        }
    }
    Some(Tensor::cat(&runs, 0))
}

/// `dense` with exact zeros where `pattern` has none. A unit direction multiplies partial
/// derivatives that are not structurally zero by 0, which gives NaN where such a partial
/// is infinite (`sqrt` at 0); the sparse derivatives never form those products, and the
/// dense ones must agree with them.
fn structural_zeros(pattern: &SparsityPattern, dense: Tensor) -> Result<Tensor> {
    let (rows, cols) = pattern.shape();
    if pattern.nnz() == rows * cols {
        return Ok(dense);
    }
    let what = || format!("the structural pattern of a {rows}×{cols} derivative");
    let mask = crate::array::try_from_shape_fn(what, &[rows, cols], |p| pattern.contains(p[0], p[1]))?;
    Ok(Tensor::from_array(&mask).where_(dense, 0.0))
}

/// The identity as a batch of `n` unit tensors of shape `shape`: a seed (its zeros are
/// structural).
fn unit_batch(shape: &[usize], dtype: DType) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut batched = vec![n];
    batched.extend_from_slice(shape);
    seed_matrix(|| format!("the identity seed of {n} directions"), &batched, |direction, k| direction == k, dtype)
}

/// A seed of shape `shape` (directions first) and of the derivative dtype of `dtype`, whose
/// element `k` (row-major, within its direction) of direction `d` is 1 if `is_one(d, k)`.
fn seed_matrix(
    what: impl FnOnce() -> String,
    shape: &[usize],
    is_one: impl Fn(usize, usize) -> bool,
    dtype: DType,
) -> Result<Tensor> {
    let per_direction: usize = shape[1..].iter().product();
    let flat = [shape[0], per_direction];
    let ones = crate::array::try_from_shape_fn(what, &flat, |p| is_one(p[0], p[1]))?;
    let shaped = ones.into_shape_with_order(IxDyn(shape)).expect("same element count");
    let host = match float_of(dtype) {
        DType::F32 => crate::array::HostArray::F32(shaped.mapv(|one| one as u8 as f32)),
        _ => crate::array::HostArray::F64(shaped.mapv(|one| one as u8 as f64)),
    };
    Ok(Tensor::seed(host))
}

/// A symbol that stands for a direction until batching replaces it: an input of a trace of
/// its own, so it can never be taken for anything else.
fn placeholder(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::traced_input(TraceId::fresh(), 0, shape.to_vec(), float_of(dtype))
}

/// Forward mode, all directions at once: `(numel y × numel x)`.
pub fn forward_jacobian(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    forward_directions(y, x, &unit_batch(x.shape(), x.dtype())?).map(|d| d.transpose())
}

/// Reverse mode, all output elements at once: `(numel y × numel x)`.
fn reverse_jacobian(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    reverse_directions(y, x, &unit_batch(y.shape(), y.dtype())?)
}

/// The derivative of `y` along `v` (a tensor of `x`'s shape): `J v`, one JVP.
pub fn jvp(y: &Tensor, x: &Tensor, v: &Tensor) -> Result<Tensor> {
    let seeds = HashMap::from([(x.node()?.id(), v.clone())]);
    let ty = jvp_nodes(&[y.node()?.clone()], &seeds)?.remove(0);
    Ok(ty.unwrap_or_else(|| zeros(y.shape(), y.dtype())))
}

/// The derivatives of `y` (flattened) along each direction in `directions` (shape
/// `[c] + x.shape`): a `(c × numel y)` matrix, computed as one batched JVP.
pub fn forward_directions(y: &Tensor, x: &Tensor, directions: &Tensor) -> Result<Tensor> {
    let (m, c) = (y.numel(), directions.check()?.shape()[0]);
    let tangent = placeholder(x.shape(), x.dtype());
    let seeds = HashMap::from([(x.node()?.id(), tangent.clone())]);
    let ty = jvp_nodes(&[y.node()?.clone()], &seeds)?.remove(0);
    let Some(ty) = ty else { return Ok(Tensor::full([c, m], 0.0, float_of(y.dtype()))) };
    let batched = HashMap::from([(tangent.node()?.id(), directions.clone())]);
    let d = vmap_nodes(&[ty.node()?.clone()], &batched, c)?.remove(0);
    Ok(d.reshape([c, m]))
}

/// The cotangents of `x` (flattened) for each cotangent of `y` in `directions` (shape
/// `[c] + y.shape`): a `(c × numel x)` matrix, computed as one batched VJP.
pub fn reverse_directions(y: &Tensor, x: &Tensor, directions: &Tensor) -> Result<Tensor> {
    let (n, c) = (x.numel(), directions.check()?.shape()[0]);
    let cotangent = placeholder(y.shape(), y.dtype());
    let bar = vjp_nodes(&[y.node()?.clone()], std::slice::from_ref(&cotangent), &[x.node()?.clone()])?.remove(0);
    let Some(bar) = bar else { return Ok(Tensor::full([c, n], 0.0, float_of(x.dtype()))) };
    let batched = HashMap::from([(cotangent.node()?.id(), directions.clone())]);
    let rows = vmap_nodes(&[bar.node()?.clone()], &batched, c)?.remove(0);
    Ok(rows.reshape([c, n]))
}

/// A sparse derivative: its non-zeros (a vector, in the pattern's CSC order), its pattern,
/// and how many directional derivatives (colours) compute it.
#[derive(Clone, Debug)]
pub struct SparseDerivative {
    /// The non-zero values, in CSC order.
    pub values: Tensor,
    /// Where they are.
    pub pattern: SparsityPattern,
    /// Directional derivatives per evaluation.
    pub colors: usize,
}

/// The Jacobian of `y` with respect to `x` as a sparse derivative: sparsity detection,
/// colouring, one batched directional derivative per colour, and a gather of the non-zeros.
/// Columns are coloured (forward mode) unless colouring the rows needs fewer colours
/// (reverse mode), as for a Jacobian with a dense row. A banded Jacobian (see
/// [`super::bands`]) is computed from its bands instead, with the same values; its colour
/// count is still reported.
pub fn sparse_jacobian(y: &Tensor, x: &Tensor) -> Result<SparseDerivative> {
    let pattern = dependency_pattern(y.node()?, x.node()?)?;
    let columns = column_coloring(&pattern);
    let rows = column_coloring(&pattern.transpose());
    let (m, n) = (y.numel(), x.numel());
    let entries = pattern.csc_entries();
    if let Some(bands) = jacobian_bands(y, x)? {
        let values = banded_values(&bands, &entries, m, n, float_of(y.dtype()));
        return Ok(SparseDerivative { values, pattern, colors: rows.count.min(columns.count) });
    }
    let (compressed, positions, colors) = if rows.count < columns.count {
        // Entry (i, j) is compressed[colour(i), j].
        let compressed = reverse_directions(y, x, &seed_directions(&rows, y.shape())?)?;
        (compressed, entries.iter().map(|&(i, j)| rows.colors[i] * n + j).collect::<Vec<_>>(), rows.count)
    } else {
        // Entry (i, j) is compressed[colour(j), i].
        let compressed = forward_directions(y, x, &seed_directions(&columns, x.shape())?)?;
        (compressed, entries.iter().map(|&(i, j)| columns.colors[j] * m + i).collect(), columns.count)
    };
    let values = gather_at(&compressed, positions);
    Ok(SparseDerivative { values, pattern, colors })
}

/// The Jacobian of `y` with respect to `x`, known to be symmetric (the Jacobian of a
/// gradient, say; `y` and `x` have as many elements): star colouring, which needs fewer
/// directional derivatives than colouring columns, reads each entry once. The whole pattern
/// (both triangles) is returned.
pub fn symmetric_jacobian(y: &Tensor, x: &Tensor) -> Result<SparseDerivative> {
    let full = dependency_pattern(y.node()?, x.node()?)?.symmetrized();
    let (values, colors) = star_compressed(y, x, &full, &full)?;
    Ok(SparseDerivative { values, pattern: full, colors })
}

/// The upper triangle of the Hessian of the scalar `y` with respect to `x`: star colouring,
/// forward over reverse.
pub fn sparse_hessian(y: &Tensor, x: &Tensor) -> Result<SparseDerivative> {
    let g = gradient(y, x)?;
    let full = dependency_pattern(g.node()?, x.node()?)?.symmetrized();
    let upper = full.upper_triangle();
    let (values, colors) = star_compressed(&g, x, &full, &upper)?;
    Ok(SparseDerivative { values, pattern: upper, colors })
}

/// The upper triangle of `JᵀJ`, `J` the Jacobian of `r` with respect to `x` (the
/// Gauss-Newton Hessian of `½‖r‖²`): the sparse Hessian of `½‖J d‖²` in a direction `d`,
/// which is `JᵀJ` whatever `d` is (so `d` is set to zero afterwards).
pub fn sparse_gauss_newton(r: &Tensor, x: &Tensor) -> Result<SparseDerivative> {
    let d = placeholder(x.shape(), x.dtype());
    let jd = jvp(r, x, &d)?;
    let half_square = (&jd * &jd).sum() * 0.5;
    let h = sparse_hessian(&half_square, &d)?;
    let zero = zeros(x.shape(), x.dtype());
    let replacements = HashMap::from([(d.node()?.id(), zero.node()?.clone())]);
    let values = crate::graph::substitute(&[h.values.node()?.clone()], &replacements)
        .map_err(|_| crate::error::Error::Transform {
            transform: "sparse_gauss_newton",
            function: String::new(),
            message: "the direction does not match the variable".into(),
        })?
        .remove(0);
    Ok(SparseDerivative { values: Tensor::from_node(values), ..h })
}

/// The entries `wanted` (in CSC order) of the symmetric Jacobian of `y` with respect to `x`,
/// whose symmetric pattern is `full`: one batched directional derivative per star colour,
/// then each entry read where its colour group has no other member. Returns the values and
/// the number of colours.
fn star_compressed(
    y: &Tensor,
    x: &Tensor,
    full: &SparsityPattern,
    wanted: &SparsityPattern,
) -> Result<(Tensor, usize)> {
    let coloring = star_coloring(full);
    if let Some(bands) = jacobian_bands(y, x)? {
        let values = banded_values(&bands, &wanted.csc_entries(), y.numel(), x.numel(), float_of(y.dtype()));
        return Ok((values, coloring.count));
    }
    // compressed[k, i] = sum over j of colour k of J[i, j]
    let compressed = forward_directions(y, x, &seed_directions(&coloring, x.shape())?)?;
    let n = x.numel();
    let color = &coloring.colors;
    let positions: Vec<usize> = wanted
        .csc_entries()
        .into_iter()
        .map(|(i, j)| {
            // In row i if j's colour is unique among i's neighbours, else in row j (star
            // colouring guarantees one of the two).
            let unique_in_row_i = full.row(i).iter().filter(|&&k| k != j && color[k] == color[j]).count() == 0;
            if unique_in_row_i {
                color[j] * n + i
            } else {
                color[i] * n + j
            }
        })
        .collect();
    let values = gather_at(&compressed, positions);
    Ok((values, coloring.count))
}

/// The most pieces the CSC values of a banded Jacobian are assembled from by slicing (see
/// [`banded_values`]); a pattern with more holes in its bands is gathered.
const MAX_BANDED_PIECES: usize = 64;

/// The entries `(i, j)` (in CSC order) of the `m × n` Jacobian whose bands are `bands`:
/// entry `(i, j)` is row `i` of band `j - i` (0 where that band is structurally zero).
///
/// Column `j` of a banded matrix holds its bands' entries at rows `j - d`, for the offsets
/// `d` in decreasing order. So the bands, each shifted by its offset and laid side by side
/// (`A[j, k] = B_{d_k}[j - d_k]`), are the CSC values in order with a few holes where a
/// band leaves the matrix (its first and last columns): the values are a handful of slices
/// of `A`, one loop writing them, with no position table. Patterns with holes inside their
/// bands gather from the stacked bands instead.
fn banded_values(bands: &Bands, entries: &[(usize, usize)], m: usize, n: usize, dtype: DType) -> Tensor {
    let offset = |&(i, j): &(usize, usize)| j as i64 - i as i64;
    let offsets: Vec<i64> = entries.iter().map(offset).collect::<BTreeSet<i64>>().into_iter().rev().collect();
    if offsets.is_empty() {
        return zeros(&[0], dtype);
    }
    let slot: HashMap<i64, usize> = offsets.iter().enumerate().map(|(s, &d)| (d, s)).collect();
    let band = |d: &i64| bands.get(d).cloned().unwrap_or_else(|| zeros(&[m], dtype)).cast(dtype);
    let width = offsets.len();
    let flat: Vec<usize> = entries.iter().map(|e| e.1 * width + slot[&offset(e)]).collect();
    let pieces = runs(&flat);
    if pieces.len() > MAX_BANDED_PIECES {
        let stacked = Tensor::stack(&offsets.iter().map(band).collect::<Vec<_>>(), 0);
        return gather_at(&stacked, entries.iter().map(|e| slot[&offset(e)] * m + e.0).collect());
    }
    let columns: Vec<Tensor> = offsets.iter().map(|d| shifted(&band(d), *d, n)).collect();
    let side_by_side = Tensor::stack(&columns, 1).flatten();
    let slices: Vec<Tensor> = pieces.iter().map(|&(start, end)| side_by_side.shrink(&[(start, end)])).collect();
    Tensor::cat(&slices, 0)
}

/// The maximal ranges `start..end` of consecutive values of the increasing `flat`.
fn runs(flat: &[usize]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &p in flat {
        match runs.last_mut() {
            Some(run) if run.1 == p => run.1 += 1,
            _ => runs.push((p, p + 1)),
        }
    }
    runs
}

/// The vector of length `n` whose element `j` is `band[j - d]` (0 where that is outside
/// the band's `m` rows).
fn shifted(band: &Tensor, d: i64, n: usize) -> Tensor {
    let m = band.numel() as i64;
    let first_row = (-d).max(0); // rows before it land before column 0
    if first_row >= m {
        return zeros(&[n], band.dtype());
    }
    let before = (first_row + d) as usize;
    let placed = band.shrink(&[(first_row as usize, m as usize)]).pad(&[(before, 0)]);
    let len = placed.numel();
    if len < n {
        placed.pad(&[(0, n - len)])
    } else {
        placed.shrink(&[(0, n)])
    }
}

/// The elements of `compressed` (flattened) at `positions`, in order: the positions as
/// 32-bit integers where they fit (half the table to read), all known to be in range (so the
/// generated gather clamps nothing).
fn gather_at(compressed: &Tensor, positions: Vec<usize>) -> Tensor {
    let index = match positions.iter().map(|&p| i32::try_from(p)).collect::<std::result::Result<Vec<i32>, _>>() {
        Ok(small) => Tensor::from_array(&Array1::from(small)),
        Err(_) => Tensor::from_array(&Array1::from(positions.into_iter().map(|p| p as i64).collect::<Vec<_>>())),
    };
    compressed.flatten().take(&index)
}

/// One seed direction per colour: the sum of the unit vectors of its columns, shaped
/// `[colours] + input shape`.
fn seed_directions(coloring: &Coloring, input_shape: &[usize]) -> Result<Tensor> {
    let n: usize = input_shape.iter().product();
    let mut shape = vec![coloring.count];
    shape.extend_from_slice(input_shape);
    let what = || format!("the seed matrix of {} colours × {n} inputs", coloring.count);
    seed_matrix(what, &shape, |color, k| coloring.colors[k] == color, DType::F64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One RK4 step of the cart-pole: 4 outputs of 5 inputs (state and force).
    fn cartpole_step(z: &Tensor) -> Tensor {
        let (x, u) = (z.shrink(&[(0, 4)]), z.get(4));
        let f = |x: &Tensor| {
            let (theta, v, omega) = (x.get(1), x.get(2), x.get(3));
            let (s, c) = (theta.sin(), theta.cos());
            let den = s.square() * 0.1 + 1.0;
            let pdd = (&u + &s * (omega.square() * 0.05 + &c * 9.81) * 0.1) / &den;
            let tdd = (-(&u * &c) - omega.square() * &c * &s * 0.05 - &s * 10.791) / (den * 0.5);
            Tensor::stack(&[v, omega, pdd, tdd], 0)
        };
        let k1 = f(&x);
        let k2 = f(&(&x + &k1 * 0.025));
        let k3 = f(&(&x + &k2 * 0.025));
        let k4 = f(&(&x + &k3 * 0.05));
        &x + (k1 + (k2 + k3) * 2.0 + k4) * (0.05 / 6.0)
    }

    #[test]
    fn jacobians_keep_the_mode_with_less_work() {
        let z = Tensor::input(0, 5, DType::F64);
        let y = cartpole_step(&z);
        let (forward, reverse) = (forward_jacobian(&y, &z).unwrap(), reverse_jacobian(&y, &z).unwrap());
        // More inputs than outputs, and still forward mode is less work.
        assert!(work(&forward).unwrap() < work(&reverse).unwrap());
        // Forward mode one direction at a time is less work still: each direction's
        // derivative drops the terms its variable does not reach.
        let pattern = dependency_pattern(y.node().unwrap(), z.node().unwrap()).unwrap();
        let one_by_one = work(&forward_unit_directions(&y, &z, &pattern).unwrap()).unwrap();
        // (The batched form masked: a `where` and a zero of 20 elements each.)
        assert!(one_by_one < work(&forward).unwrap() + 40);
        assert_eq!(work(&jacobian(&y, &z).unwrap()).unwrap(), one_by_one);
        // A layer of 16 inputs and 4 outputs: reverse.
        let x = Tensor::input(0, 16, DType::F64);
        let w = Tensor::from_array(&ndarray::Array2::from_shape_fn((4, 16), |(i, j)| (i + j) as f64 * 0.1));
        let layer = w.matmul(&x).tanh();
        let reverse = work(&reverse_jacobian(&layer, &x).unwrap()).unwrap();
        assert!(reverse < work(&forward_jacobian(&layer, &x).unwrap()).unwrap());
        assert_eq!(work(&jacobian(&layer, &x).unwrap()).unwrap(), reverse);
    }

    #[test]
    fn large_jacobians_build_only_the_mode_the_sizes_pick() {
        // Forward mode here would need a 3·10⁵ × 3·10⁵ identity seed (90 GB as bytes): it must not be
        // built, and reverse mode (a 1 × 1 seed) is.
        let x = Tensor::input(0, 300_000, DType::F64);
        let y = (x.sin() * &x).sum().reshape([1]);
        let j = jacobian(&y, &x).unwrap();
        assert_eq!(j.shape(), &[1, 300_000]);
    }

    /// The robot arm's rates (COPS): every variable read as an element.
    fn arm_rates(z: &Tensor) -> Tensor {
        let (rho, s) = (z.get(0), z.get(2).sin());
        let far = -&rho + 5.0;
        let i_phi = (&far * &far * &far + &rho * &rho * &rho) / 3.0;
        let rates = [z.get(3), z.get(4), z.get(5), z.get(6) / 5.0, z.get(7) / (&i_phi * &s * &s), z.get(8) / &i_phi];
        Tensor::stack(&rates, 0)
    }

    /// `values` evaluated by the reference interpreter at `z`.
    fn at(values: &Tensor, z: &[f64]) -> Vec<f64> {
        let input = crate::array::HostArray::F64(ndarray::ArrayD::from_shape_vec(vec![z.len()], z.to_vec()).unwrap());
        match crate::graph::eval_nodes(&[values.node().unwrap().clone()], &[input]).unwrap().remove(0) {
            crate::array::HostArray::F64(a) => a.iter().copied().collect(),
            other => panic!("expected f64 values, got {other:?}"),
        }
    }

    #[test]
    fn hessians_of_element_reads_take_one_direction_at_a_time_with_the_batched_values() {
        let z = Tensor::input(0, 9, DType::F64);
        let weights = Tensor::from_array(&ndarray::Array1::from(vec![0.3, -1.2, 0.7, 2.0, -0.4, 1.5]));
        let point = [1.3, 0.2, 0.9, 0.1, -0.3, 0.2, 0.5, -0.7, 0.25];
        let batched = |y: &Tensor| {
            let (g, pattern) = gradient_and_pattern(y, &z);
            structural_zeros(&pattern, forward_jacobian(&g, &z).unwrap()).unwrap()
        };
        let y = (arm_rates(&z) * &weights).sum();
        let (h, all_at_once) = (hessian(&y, &z).unwrap(), batched(&y));
        // The batched form multiplies every partial by every direction's seed.
        assert!(
            work(&h).unwrap() < work(&all_at_once).unwrap(),
            "{} {}",
            work(&h).unwrap(),
            work(&all_at_once).unwrap()
        );
        let (one, all) = (at(&h, &point), at(&all_at_once, &point));
        assert!(
            one.iter().zip(&all).all(|(a, b)| a.to_bits() == b.to_bits() || (*a == 0.0 && *b == 0.0)),
            "{one:?}\n{all:?}"
        );
        assert!(one.iter().any(|v| *v != 0.0));
        // A step that computes with its state whole: whichever form is kept, the same values.
        let x = Tensor::input(0, 5, DType::F64);
        let step = (cartpole_step(&x) * &weights.shrink(&[(0, 4)])).sum();
        let h = hessian(&step, &x).unwrap();
        let (g, pattern) = gradient_and_pattern(&step, &x);
        let all_at_once = structural_zeros(&pattern, forward_jacobian(&g, &x).unwrap()).unwrap();
        assert!(work(&h).unwrap() <= work(&all_at_once).unwrap());
        let (one, all) = (at(&h, &point[..5]), at(&all_at_once, &point[..5]));
        assert!(one.iter().zip(&all).all(|(a, b)| a.to_bits() == b.to_bits() || (*a == 0.0 && *b == 0.0)));
    }

    /// The gradient of the scalar `y` and its (symmetrized) dependency pattern on `x`: a
    /// Hessian's forward directions and structure.
    fn gradient_and_pattern(y: &Tensor, x: &Tensor) -> (Tensor, SparsityPattern) {
        let g = gradient(y, x).unwrap();
        let pattern = dependency_pattern(g.node().unwrap(), x.node().unwrap()).unwrap().symmetrized();
        (g, pattern)
    }

    /// Springs between neighbours, integrated `steps` times: every element read alone.
    fn springs(x: &Tensor, steps: usize) -> Tensor {
        let n = x.numel();
        let mut s: Vec<Tensor> = (0..n).map(|i| x.get(i as isize)).collect();
        for _ in 0..steps {
            s = (0..n)
                .map(|i| {
                    let (left, right) = (&s[(i + n - 1) % n], &s[(i + 1) % n]);
                    let stretch = (left - &s[i]) * (right - &s[i]);
                    &s[i] + (stretch + 1.0).sqrt() * 0.1
                })
                .collect();
        }
        Tensor::stack(&s, 0)
    }

    #[test]
    fn derivatives_too_large_one_direction_at_a_time_stay_batched() {
        let x = Tensor::input(0, 24, DType::F64);
        let y = springs(&x, 8).sum();
        let (g, pattern) = gradient_and_pattern(&y, &x);
        let batched = structural_zeros(&pattern, forward_jacobian(&g, &x).unwrap()).unwrap();
        let one_by_one = forward_unit_directions(&g, &x, &pattern).unwrap();
        let (unrolled, looped) = (work(&one_by_one).unwrap(), work(&batched).unwrap());
        // Less work written out, but past the budget its code would not compile in time.
        assert!(UNIT_DIRECTIONS_MAX_WORK < unrolled && unrolled < looped, "{unrolled} {looped}");
        let h = hessian(&y, &x).unwrap();
        assert_eq!(work(&h).unwrap(), looped);
        let point: Vec<f64> = (0..24).map(|i| 0.1 * i as f64 - 0.7).collect();
        let (kept, other) = (at(&h, &point), at(&one_by_one, &point));
        assert!(kept.iter().zip(&other).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())));
        // A smaller one is still written out.
        let x = Tensor::input(0, 6, DType::F64);
        let y = springs(&x, 2).sum();
        let (g, pattern) = gradient_and_pattern(&y, &x);
        let one_by_one = work(&forward_unit_directions(&g, &x, &pattern).unwrap()).unwrap();
        assert_eq!(work(&hessian(&y, &x).unwrap()).unwrap(), one_by_one);
    }

    #[test]
    fn one_direction_derivatives_keep_structural_zeros_where_a_partial_is_infinite() {
        // sqrt at 0: its derivatives are infinite, and a direction that does not reach it
        // must not turn them into NaN in the entries the structure says are zero.
        let z = Tensor::input(0, 3, DType::F64);
        let y = z.get(0).sqrt() * 2.0 + z.get(1) * z.get(2) * z.get(2);
        let h = hessian(&y, &z).unwrap();
        let values = at(&h, &[0.0, 1.5, -2.0]);
        let want = [f64::NEG_INFINITY, 0.0, 0.0, 0.0, 0.0, -4.0, 0.0, -4.0, 3.0];
        for (k, (v, w)) in values.iter().zip(want).enumerate() {
            assert!(v == &w, "entry {k}: {v} (want {w}): {values:?}");
        }
        let g = Tensor::stack(&[z.get(0).sqrt(), z.get(1) * z.get(2)], 0);
        let j = at(&jacobian(&g, &z).unwrap(), &[0.0, 1.5, -2.0]);
        assert!(j[0].is_infinite() && j[1..].iter().all(|v| v.is_finite()), "{j:?}");
    }
}

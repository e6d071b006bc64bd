//! Sparse derivatives: a compressed derivative (one batched directional derivative per
//! colour) whose non-zeros are gathered into CSC order.

use super::ad::{check_wrt, forward_directions, gradient_tensor, input_tensors, reverse_directions};
use super::coloring::{column_coloring, star_coloring, Coloring};
use super::sparsity::{dependency_pattern, SparsityPattern};
use crate::error::{Error, Result};
use crate::function::{Arg, IntoOutputs, NumericalFunction};
use crate::render::SparsePattern;
use crate::tensor::Tensor;
use ndarray::{Array1, ArrayD, ArrayViewD, IxDyn};
use std::ops::Deref;

/// A function whose output is the non-zero values of a sparse matrix in CSC order (column
/// by column, rows increasing), with the pattern fixed when it was built.
///
/// It dereferences to the underlying [`NumericalFunction`] (whose single output is the
/// `nnz` values): pass `&*sparse` to [`crate::generate_module`]; the C++ namespace then
/// also carries `rows`, `cols`, `nnz`, `innerIndices[]` and `outerStarts[]`.
pub struct SparseNumericalFunction {
    function: NumericalFunction,
    pattern: SparsityPattern,
    colors: usize,
}

impl SparseNumericalFunction {
    fn new(function: NumericalFunction, pattern: SparsityPattern, colors: usize) -> Self {
        let (rows, cols) = pattern.shape();
        let (indptr, indices) = pattern.csc();
        let function = function.with_sparsity(SparsePattern {
            rows,
            cols,
            nnz: indices.len(),
            inner_indices: indices,
            outer_starts: indptr,
        });
        SparseNumericalFunction { function, pattern, colors }
    }

    /// The same sparse function under another name.
    pub fn renamed(&self, name: &str) -> Result<Self> {
        Ok(SparseNumericalFunction {
            function: self.function.renamed(name)?,
            pattern: self.pattern.clone(),
            colors: self.colors,
        })
    }

    /// `(rows, cols)` of the matrix.
    pub fn shape(&self) -> (usize, usize) {
        self.pattern.shape()
    }

    /// Number of stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.pattern.nnz()
    }

    /// Row index of each stored value (CSC `innerIndices`).
    pub fn indices(&self) -> Vec<usize> {
        self.pattern.csc().1
    }

    /// Start of each column in the values, `cols + 1` entries (CSC `outerStarts`).
    pub fn indptr(&self) -> Vec<usize> {
        self.pattern.csc().0
    }

    /// The sparsity pattern.
    pub fn pattern(&self) -> &SparsityPattern {
        &self.pattern
    }

    /// Directional derivatives evaluated per call (colours); 0 for user-given patterns.
    pub fn colors(&self) -> usize {
        self.colors
    }

    /// The `nnz` values, through the JIT (see [`NumericalFunction::call`]).
    pub fn call(&self, inputs: &[ArrayViewD<f64>]) -> Result<Array1<f64>> {
        Ok(into_vector(self.function.call(inputs)?.remove(0)))
    }

    /// The `nnz` values, through the interpreter.
    pub fn eval(&self, inputs: &[ArrayViewD<f64>]) -> Result<Array1<f64>> {
        Ok(into_vector(self.function.eval(inputs)?.remove(0)))
    }

    /// The matrix in CSC form, through the JIT.
    pub fn call_csc(&self, inputs: &[ArrayViewD<f64>]) -> Result<CscMatrix> {
        let values = self.call(inputs)?.to_vec();
        Ok(CscMatrix { shape: self.shape(), indptr: self.indptr(), indices: self.indices(), values })
    }

    /// The matrix as a dense array (for checks and small problems), through the JIT.
    pub fn call_dense(&self, inputs: &[ArrayViewD<f64>]) -> Result<ndarray::Array2<f64>> {
        Ok(self.call_csc(inputs)?.to_dense())
    }
}

/// A sparse matrix in compressed sparse column form: the values of column `j` are
/// `values[indptr[j]..indptr[j + 1]]`, in rows `indices[indptr[j]..indptr[j + 1]]`.
///
/// anvil keeps foreign sparse types out of its API; the parts convert directly, e.g.
/// `sprs::CsMat::new_csc(m.shape, m.indptr, m.indices, m.values)` or
/// `scipy.sparse.csc_array((values, indices, indptr), shape)`.
///
/// ```
/// use anvil::ad::CscMatrix;
/// let m = CscMatrix { shape: (2, 2), indptr: vec![0, 1, 3], indices: vec![0, 0, 1], values: vec![1.0, 2.0, 3.0] };
/// assert_eq!(m.get(0, 1), 2.0);
/// assert_eq!(m.to_dense(), anvil::ndarray::array![[1.0, 2.0], [0.0, 3.0]]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CscMatrix {
    /// `(rows, cols)`.
    pub shape: (usize, usize),
    /// Start of each column in `indices` and `values` (`cols + 1` entries).
    pub indptr: Vec<usize>,
    /// Row of each stored value.
    pub indices: Vec<usize>,
    /// The stored values, column by column.
    pub values: Vec<f64>,
}

impl CscMatrix {
    /// The entry `(i, j)` (0 where nothing is stored).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (start, end) = (self.indptr[j], self.indptr[j + 1]);
        self.indices[start..end].binary_search(&i).map_or(0.0, |k| self.values[start + k])
    }

    /// The matrix as a dense array.
    pub fn to_dense(&self) -> ndarray::Array2<f64> {
        let mut dense = ndarray::Array2::zeros(self.shape);
        for j in 0..self.shape.1 {
            for k in self.indptr[j]..self.indptr[j + 1] {
                dense[(self.indices[k], j)] = self.values[k];
            }
        }
        dense
    }
}

fn into_vector(a: ArrayD<f64>) -> Array1<f64> {
    let n = a.len();
    a.into_shape_with_order(n).expect("the values are a vector")
}

impl std::fmt::Debug for SparseNumericalFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseNumericalFunction")
            .field("function", &self.function)
            .field("shape", &self.shape())
            .field("nnz", &self.nnz())
            .field("colors", &self.colors)
            .finish()
    }
}

impl Deref for SparseNumericalFunction {
    type Target = NumericalFunction;
    fn deref(&self) -> &NumericalFunction {
        &self.function
    }
}

/// The Jacobian of `f`'s first output with respect to its first input, as a sparse
/// function: sparsity detection, colouring, one batched directional derivative per colour,
/// and a gather of the non-zeros into CSC order. Columns are coloured (forward mode, JVPs)
/// unless colouring the rows needs fewer colours (reverse mode, VJPs), as for a Jacobian
/// with a dense row.
///
/// ```
/// use anvil::{ad, Arg, NumericalFunction, ndarray::Array1};
/// # fn main() -> anvil::Result<()> {
/// let n = 100;
/// let f = NumericalFunction::new("r", |[x]| {
///     let p = x.pad(&[(1, 1)]);
///     p.shrink(&[(0, n)]) - &x * 2.0 + p.shrink(&[(2, n + 2)]) + x.exp() * 1e-4
/// }, [Arg::new(n)])?;
/// let jac = ad::spjacobian(&f)?;
/// assert_eq!((jac.nnz(), jac.colors()), (3 * n - 2, 3));
/// let x = Array1::linspace(0.0, 1.0, n).into_dyn();
/// let values = jac.eval(&[x.view()])?; // or `jac.call` through the JIT
/// assert_eq!(values.len(), 3 * n - 2);
/// # Ok(()) }
/// ```
pub fn spjacobian(f: &NumericalFunction) -> Result<SparseNumericalFunction> {
    spjacobian_wrt(f, 0)
}

/// [`spjacobian`] with respect to input `wrt`.
pub fn spjacobian_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    check_wrt("spjacobian", f, wrt)?;
    let y = f.output_tensors()[0].clone();
    let x = input_tensors(f)[wrt].clone();
    let pattern = dependency_pattern(y.node()?, x.node()?)?;
    let columns = column_coloring(&pattern);
    let rows = column_coloring(&pattern.transpose());
    let (m, n) = (y.numel(), x.numel());
    let (compressed, positions, coloring): (Tensor, Vec<i64>, Coloring) = if rows.count < columns.count {
        // Entry (i, j) is compressed[colour(i), j].
        let compressed = reverse_directions(f, &y, &x, &seed_directions(&rows, y.shape())?)?;
        let positions = entries_csc(&pattern).map(|(i, j)| (rows.colors[i] * n + j) as i64).collect();
        (compressed, positions, rows)
    } else {
        // Entry (i, j) is compressed[colour(j), i].
        let compressed = forward_directions(f, &y, &x, &seed_directions(&columns, x.shape())?)?;
        let positions = entries_csc(&pattern).map(|(i, j)| (columns.colors[j] * m + i) as i64).collect();
        (compressed, positions, columns)
    };
    let values = compressed.flatten().take(&Tensor::from_array(&Array1::from(positions)));
    let function = NumericalFunction::from_tensors(&format!("{}_spjac", f.name()), f.inputs().to_vec(), &[values])?;
    Ok(SparseNumericalFunction::new(function, pattern, coloring.count))
}

/// The upper triangle of the Hessian of `f`'s scalar first output with respect to its
/// first input, as a sparse function (star colouring, forward over reverse).
pub fn sphessian(f: &NumericalFunction) -> Result<SparseNumericalFunction> {
    sphessian_wrt(f, 0)
}

/// [`sphessian`] with respect to input `wrt`.
pub fn sphessian_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    let g = gradient_tensor(f, wrt)?;
    let x = input_tensors(f)[wrt].clone();
    let full = dependency_pattern(g.node()?, x.node()?)?.symmetrized();
    let upper = full.upper_triangle();
    let (values, colors) = star_compressed(f, &g, &x, &full, &upper)?;
    let function = NumericalFunction::from_tensors(&format!("{}_sphess", f.name()), f.inputs().to_vec(), &[values])?;
    Ok(SparseNumericalFunction::new(function, upper, colors))
}

/// The Jacobian of `f`'s first output with respect to input `wrt`, known to be symmetric
/// (the Jacobian of a gradient, say): star colouring, which needs fewer directional
/// derivatives than colouring columns, reads each entry once. The whole pattern is returned
/// (both triangles). The output must have as many elements as the input; that the
/// Jacobian is symmetric is the caller's promise (otherwise the values are wrong).
pub fn spjacobian_symmetric_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    check_wrt("spjacobian", f, wrt)?;
    let y = f.output_tensors()[0].clone();
    let x = input_tensors(f)[wrt].clone();
    if y.numel() != x.numel() {
        let message = format!(
            "a symmetric Jacobian is square, but output 0 has {} elements and input {wrt} has {}",
            y.numel(),
            x.numel()
        );
        return Err(Error::Transform { transform: "spjacobian", function: f.name().into(), message });
    }
    let full = dependency_pattern(y.node()?, x.node()?)?.symmetrized();
    let (values, colors) = star_compressed(f, &y, &x, &full, &full)?;
    let function = NumericalFunction::from_tensors(&format!("{}_spjac", f.name()), f.inputs().to_vec(), &[values])?;
    Ok(SparseNumericalFunction::new(function, full, colors))
}

/// The entries `wanted` (in CSC order) of the symmetric Jacobian of `y` with respect to `x`,
/// whose symmetric pattern is `full`: one batched directional derivative per star colour,
/// then each entry read where its colour group has no other member. Returns the values and
/// the number of colours.
fn star_compressed(
    f: &NumericalFunction,
    y: &Tensor,
    x: &Tensor,
    full: &SparsityPattern,
    wanted: &SparsityPattern,
) -> Result<(Tensor, usize)> {
    let coloring = star_coloring(full);
    // compressed[k, i] = sum over j of colour k of J[i, j]
    let compressed = forward_directions(f, y, x, &seed_directions(&coloring, x.shape())?)?;
    let n = x.numel();
    let color = &coloring.colors;
    let positions: Vec<i64> = entries_csc(wanted)
        .map(|(i, j)| {
            // In row i if j's colour is unique among i's neighbours, else in row j (star
            // colouring guarantees one of the two).
            let unique_in_row_i = full.row(i).iter().filter(|&&k| k != j && color[k] == color[j]).count() == 0;
            if unique_in_row_i {
                (color[j] * n + i) as i64
            } else {
                (color[i] * n + j) as i64
            }
        })
        .collect();
    let values = compressed.flatten().take(&Tensor::from_array(&Array1::from(positions)));
    Ok((values, coloring.count))
}

/// The `(row, col)` entries in CSC order.
fn entries_csc(pattern: &SparsityPattern) -> impl Iterator<Item = (usize, usize)> {
    pattern.columns().into_iter().enumerate().flat_map(|(j, rows)| rows.into_iter().map(move |i| (i, j)))
}

/// One seed direction per colour: the sum of the unit vectors of its columns, shaped
/// `[colours] + input shape`.
fn seed_directions(coloring: &Coloring, input_shape: &[usize]) -> Result<Tensor> {
    let n: usize = input_shape.iter().product();
    let mut shape = vec![coloring.count];
    shape.extend_from_slice(input_shape);
    let what = || format!("the seed matrix of {} colours × {n} inputs", coloring.count);
    let flat = crate::array::try_from_shape_fn(what, &[coloring.count, n], |p| {
        if coloring.colors[p[1]] == p[0] {
            1.0
        } else {
            0.0
        }
    })?;
    Ok(Tensor::from_array(&flat.into_shape_with_order(IxDyn(&shape)).expect("same element count")))
}

/// A sparse function from a user-given CSC pattern: `f` returns the `nnz` values (a vector)
/// in CSC order of the `shape` matrix with row indices `indices` and column starts `indptr`.
///
/// ```
/// use anvil::{ad, Arg};
/// # fn main() -> anvil::Result<()> {
/// // diag(x) as a 3×3 sparse matrix
/// let d = ad::sparse_numerical_function("diag", |[x]| x * 1.0, [Arg::new(3)], (3, 3), &[0, 1, 2], &[0, 1, 2, 3])?;
/// assert_eq!(d.nnz(), 3);
/// assert!(ad::sparse_numerical_function("bad", |[x]| x * 1.0, [Arg::new(3)], (3, 3), &[0, 1], &[0, 1, 2, 2]).is_err());
/// # Ok(()) }
/// ```
pub fn sparse_numerical_function<const N: usize, O: IntoOutputs>(
    name: &str,
    f: impl FnOnce([Tensor; N]) -> O,
    inputs: [Arg; N],
    shape: (usize, usize),
    indices: &[usize],
    indptr: &[usize],
) -> Result<SparseNumericalFunction> {
    SparseNumericalFunction::from_function(NumericalFunction::new(name, f, inputs)?, shape, indices, indptr)
}

impl SparseNumericalFunction {
    /// A sparse function from a traced function returning the `nnz` values of a `shape`
    /// matrix in CSC order (row indices `indices`, column starts `indptr`). The pattern is
    /// checked: `cols + 1` non-decreasing column starts from 0, increasing rows below
    /// `rows` within each column, and exactly `nnz` values returned.
    pub fn from_function(
        function: NumericalFunction,
        shape: (usize, usize),
        indices: &[usize],
        indptr: &[usize],
    ) -> Result<Self> {
        let pattern = checked_pattern(&function, shape, indices, indptr)?;
        Ok(SparseNumericalFunction::new(function, pattern, 0))
    }

    /// The sparse function stored by [`NumericalFunction::save`] or
    /// [`SparseNumericalFunction::save`] (its pattern is checked again).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (function, colors) = NumericalFunction::from_bytes_with_colors(bytes)?;
        let Some(p) = function.sparsity().cloned() else {
            return Err(Error::Deserialize { message: format!("`{}` is not a sparse function", function.name()) });
        };
        let pattern = checked_pattern(&function, (p.rows, p.cols), &p.inner_indices, &p.outer_starts)?;
        Ok(SparseNumericalFunction::new(function, pattern, colors))
    }

    /// The function in anvil's function format, pattern and colour count included.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.function.to_bytes_with_colors(self.colors)
    }

    /// Writes the function to `path` ([`to_bytes`](Self::to_bytes)).
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bytes()).map_err(|e| Error::io("write", path, e))
    }

    /// Reads a sparse function written by [`save`](Self::save).
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
        Self::from_bytes(&bytes)
    }
}

/// The pattern of a `shape` matrix with row indices `indices` and column starts `indptr`
/// (CSC), checked: `cols + 1` non-decreasing column starts from 0, increasing rows below
/// `rows` within each column, and `function` returning exactly one vector of the `nnz`
/// values.
pub(crate) fn checked_pattern(
    function: &NumericalFunction,
    shape: (usize, usize),
    indices: &[usize],
    indptr: &[usize],
) -> Result<SparsityPattern> {
    let name = function.name().to_string();
    let bad =
        |message: String| Error::Transform { transform: "sparse_numerical_function", function: name.clone(), message };
    let (rows, cols) = shape;
    crate::array::check_alloc(|| format!("the row lists of a sparse pattern with {rows} rows"), rows, 24)?;
    if indptr.len() != cols.saturating_add(1) || indptr.first() != Some(&0) || indptr.windows(2).any(|w| w[0] > w[1]) {
        return Err(bad(format!(
            "indptr must have cols + 1 = {} non-decreasing entries starting at 0",
            cols.saturating_add(1)
        )));
    }
    if indptr[cols] != indices.len() {
        return Err(bad(format!("indptr ends at {} but {} row indices are given", indptr[cols], indices.len())));
    }
    let mut entries = Vec::with_capacity(indices.len());
    for j in 0..cols {
        let col = &indices[indptr[j]..indptr[j + 1]];
        if col.windows(2).any(|w| w[0] >= w[1]) || col.iter().any(|&i| i >= rows) {
            return Err(bad(format!("the row indices of column {j} must increase and be below {rows}")));
        }
        entries.extend(col.iter().map(|&i| (i, j)));
    }
    let nnz = indices.len();
    let out = &function.outputs()[0];
    if function.outputs().len() != 1 || out.shape != vec![nnz] {
        let message = format!("the function must return one vector of the {nnz} non-zeros, it returns {:?}", out.shape);
        return Err(bad(message));
    }
    SparsityPattern::new(rows, cols, entries).ok_or_else(|| bad("row index out of range".into()))
}

//! `SparseNumericalFunction`: a function returning the non-zeros of a sparse matrix.

use super::arg::Arg;
use super::numerical::NumericalFunction;
use super::outputs::IntoOutputs;
use crate::error::{Error, Result};
use crate::pattern::{CscMatrix, SparsityPattern};
use crate::tensor::Tensor;
use ndarray::{Array1, ArrayD, ArrayViewD};
use std::ops::Deref;

/// A function whose output is the non-zero values of a sparse matrix in CSC order (column
/// by column, rows increasing), with the pattern fixed when it was built.
///
/// It dereferences to the underlying [`NumericalFunction`] (whose single output is the
/// `nnz` values), and is a module item of its own: in C++ its namespace also carries
/// `rows`, `cols`, `nnz`, `innerIndices[]` and `outerStarts[]`.
pub struct SparseNumericalFunction {
    function: NumericalFunction,
    colors: usize,
}

impl SparseNumericalFunction {
    /// `function` (returning the `nnz` values) with `pattern` (checked against it), computed
    /// with `colors` directional derivatives (0 for a user-given pattern).
    pub(crate) fn new(function: NumericalFunction, pattern: SparsityPattern, colors: usize) -> Result<Self> {
        let nnz = pattern.nnz();
        let out = &function.outputs()[0];
        if function.outputs().len() != 1 || out.shape != vec![nnz] {
            let message =
                format!("the function must return one vector of the {nnz} non-zeros, it returns {:?}", out.shape);
            return Err(Error::Transform {
                transform: "sparse_numerical_function",
                function: function.name().into(),
                message,
            });
        }
        Ok(SparseNumericalFunction { function: function.with_sparsity(pattern), colors })
    }

    /// A sparse function from a traced function returning the `nnz` values of a `shape`
    /// matrix in CSC order (row indices `indices`, column starts `indptr`). The pattern is
    /// checked ([`SparsityPattern::from_csc`]), and the function must return exactly the
    /// `nnz` values.
    pub fn from_function(
        function: NumericalFunction,
        shape: (usize, usize),
        indices: &[usize],
        indptr: &[usize],
    ) -> Result<Self> {
        let pattern = SparsityPattern::from_csc(shape.0, shape.1, indices, indptr).map_err(|message| {
            Error::Transform { transform: "sparse_numerical_function", function: function.name().into(), message }
        })?;
        SparseNumericalFunction::new(function, pattern, 0)
    }

    /// The same function lowered with other options (before the first call); see
    /// [`NumericalFunction::with_lowering`].
    pub fn with_lowering(self, options: crate::lower::LowerOptions) -> Self {
        SparseNumericalFunction { function: self.function.with_lowering(options), ..self }
    }

    /// The same function on another backend (before the first call); see
    /// [`NumericalFunction::with_backend`].
    pub fn with_backend(self, backend: crate::Backend) -> Self {
        SparseNumericalFunction { function: self.function.with_backend(backend), ..self }
    }

    /// The function of the values (with the pattern attached).
    pub(crate) fn into_function(self) -> NumericalFunction {
        self.function
    }

    /// The same sparse function under another name.
    pub fn renamed(&self, name: &str) -> Result<Self> {
        Ok(SparseNumericalFunction { function: self.function.renamed(name)?, colors: self.colors })
    }

    /// The sparsity pattern.
    pub fn pattern(&self) -> &SparsityPattern {
        self.function.sparsity().expect("a sparse function has a pattern")
    }

    /// `(rows, cols)` of the matrix.
    pub fn shape(&self) -> (usize, usize) {
        self.pattern().shape()
    }

    /// Number of stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.pattern().nnz()
    }

    /// Row index of each stored value (CSC `innerIndices`).
    pub fn indices(&self) -> Vec<usize> {
        self.pattern().csc().1
    }

    /// Start of each column in the values, `cols + 1` entries (CSC `outerStarts`).
    pub fn indptr(&self) -> Vec<usize> {
        self.pattern().csc().0
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

    /// The sparse function stored by [`NumericalFunction::save`] or
    /// [`SparseNumericalFunction::save`] (its pattern is checked again).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (function, colors) = NumericalFunction::from_bytes_with_colors(bytes)?;
        let Some(pattern) = function.sparsity().cloned() else {
            return Err(Error::Deserialize { message: format!("`{}` is not a sparse function", function.name()) });
        };
        SparseNumericalFunction::new(function, pattern, colors)
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

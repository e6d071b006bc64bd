//! Sparsity patterns: which entries of a matrix can be non-zero, in one type that sparsity
//! detection produces, colouring and the sparse derivatives use, generated code prints
//! (compressed sparse column form) and optimisation problems stamp values into.

/// The positions of the structural non-zeros of a `rows × cols` matrix.
///
/// ```
/// use anvil::SparsityPattern;
/// let p = SparsityPattern::new(3, 3, [(0, 0), (1, 1), (2, 1), (2, 2)]).unwrap();
/// assert_eq!(p.nnz(), 4);
/// let (indptr, indices) = p.csc();
/// assert_eq!(indptr, vec![0, 1, 3, 4]);
/// assert_eq!(indices, vec![0, 1, 2, 2]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparsityPattern {
    rows: usize,
    cols: usize,
    /// For each row, its non-zero columns in increasing order.
    row_cols: Vec<Vec<usize>>,
}

impl SparsityPattern {
    /// A pattern from `(row, col)` entries (duplicates are merged); `None` if one is out
    /// of range.
    pub fn new(rows: usize, cols: usize, entries: impl IntoIterator<Item = (usize, usize)>) -> Option<Self> {
        let mut row_cols = vec![Vec::new(); rows];
        for (i, j) in entries {
            if i >= rows || j >= cols {
                return None;
            }
            row_cols[i].push(j);
        }
        for r in &mut row_cols {
            r.sort_unstable();
            r.dedup();
        }
        Some(SparsityPattern { rows, cols, row_cols })
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Number of structural non-zeros.
    pub fn nnz(&self) -> usize {
        self.row_cols.iter().map(Vec::len).sum()
    }

    /// The non-zero columns of row `i`, increasing.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.row_cols[i]
    }

    /// True if `(i, j)` is a structural non-zero.
    pub fn contains(&self, i: usize, j: usize) -> bool {
        self.row_cols.get(i).is_some_and(|r| r.binary_search(&j).is_ok())
    }

    /// The non-zero rows of each column: `cols` lists of increasing rows.
    pub fn columns(&self) -> Vec<Vec<usize>> {
        let mut cols = vec![Vec::new(); self.cols];
        for (i, r) in self.row_cols.iter().enumerate() {
            for &j in r {
                cols[j].push(i);
            }
        }
        cols
    }

    /// Compressed sparse column form: `(indptr, indices)` (column starts, row indices).
    pub fn csc(&self) -> (Vec<usize>, Vec<usize>) {
        let mut indptr = vec![0];
        let mut indices = Vec::with_capacity(self.nnz());
        for col in self.columns() {
            indices.extend(&col);
            indptr.push(indices.len());
        }
        (indptr, indices)
    }

    /// The transposed pattern.
    pub fn transpose(&self) -> Self {
        let entries = self.row_cols.iter().enumerate().flat_map(|(i, r)| r.iter().map(move |&j| (j, i)));
        SparsityPattern::new(self.cols, self.rows, entries).expect("a transpose fits the swapped shape")
    }

    /// The entries on and above the diagonal.
    pub fn upper_triangle(&self) -> Self {
        let row_cols =
            self.row_cols.iter().enumerate().map(|(i, r)| r.iter().copied().filter(|&j| j >= i).collect()).collect();
        SparsityPattern { rows: self.rows, cols: self.cols, row_cols }
    }

    /// The pattern together with its transpose (square patterns).
    pub fn symmetrized(&self) -> Self {
        let mut entries: Vec<(usize, usize)> = Vec::new();
        for (i, r) in self.row_cols.iter().enumerate() {
            for &j in r {
                entries.push((i, j));
                entries.push((j, i));
            }
        }
        SparsityPattern::new(self.rows, self.cols, entries).expect("a square pattern's transpose fits")
    }
}

impl SparsityPattern {
    /// The `(row, col)` entries in compressed-sparse-column order (column by column, rows
    /// increasing): the order the values of a sparse function come in.
    pub fn csc_entries(&self) -> Vec<(usize, usize)> {
        self.columns().into_iter().enumerate().flat_map(|(j, rows)| rows.into_iter().map(move |i| (i, j))).collect()
    }

    /// The pattern with row indices `indices` and column starts `indptr` (CSC) of a
    /// `rows × cols` matrix, checked: `cols + 1` non-decreasing column starts from 0, ending
    /// at the number of indices, and increasing rows below `rows` in each column.
    ///
    /// ```
    /// use anvil::SparsityPattern;
    /// let p = SparsityPattern::from_csc(2, 2, &[0, 0, 1], &[0, 1, 3]).unwrap();
    /// assert_eq!(p.nnz(), 3);
    /// assert!(SparsityPattern::from_csc(2, 2, &[1, 0], &[0, 2, 2]).is_err()); // rows must increase
    /// ```
    pub fn from_csc(rows: usize, cols: usize, indices: &[usize], indptr: &[usize]) -> Result<Self, String> {
        if indptr.len() != cols.saturating_add(1)
            || indptr.first() != Some(&0)
            || indptr.windows(2).any(|w| w[0] > w[1])
        {
            return Err(format!(
                "indptr must have cols + 1 = {} non-decreasing entries starting at 0",
                cols.saturating_add(1)
            ));
        }
        if indptr[cols] != indices.len() {
            return Err(format!("indptr ends at {} but {} row indices are given", indptr[cols], indices.len()));
        }
        crate::array::check_alloc(|| format!("the rows of a {rows}-row sparsity pattern"), rows, 24)
            .map_err(|e| e.to_string())?;
        let mut row_cols = vec![Vec::new(); rows];
        for j in 0..cols {
            let col = &indices[indptr[j]..indptr[j + 1]];
            if col.windows(2).any(|w| w[0] >= w[1]) || col.iter().any(|&i| i >= rows) {
                return Err(format!("the row indices of column {j} must increase and be below {rows}"));
            }
            for &i in col {
                row_cols[i].push(j);
            }
        }
        Ok(SparsityPattern { rows, cols, row_cols })
    }

    /// The same entries in a `rows × cols` matrix with the diagonal added (square
    /// patterns): regularisation adds to the diagonal, which must be stored.
    pub fn with_diagonal(&self) -> Self {
        let entries = self.csc_entries().into_iter().chain((0..self.rows.min(self.cols)).map(|i| (i, i)));
        SparsityPattern::new(self.rows, self.cols, entries).expect("the diagonal fits")
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
/// use anvil::CscMatrix;
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

//! Products composed from broadcasting multiply and sum.

use super::Tensor;
use crate::error::Error;
use crate::error::SourceLocation;
use crate::shape::fmt_shape;

impl Tensor {
    /// The matrix product with numpy's rules: vector·vector is a scalar, matrix·vector a
    /// vector, and leading (batch) axes broadcast.
    ///
    /// ```
    /// use anvil::{Tensor, DType};
    /// let a = Tensor::input(0, [5, 2, 3], DType::F64);
    /// let b = Tensor::input(1, [3, 4], DType::F64);
    /// assert_eq!(a.matmul(&b).shape(), &[5, 2, 4]);
    /// assert!(b.matmul(&b).check().is_err());
    /// ```
    #[track_caller]
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        let loc = SourceLocation::caller();
        if let Some(e) = self.error().or(other.error()) {
            return Tensor::from_error(e.clone());
        }
        let (ra, rb) = (self.ndim(), other.ndim());
        if ra == 0 || rb == 0 {
            return Tensor::from_error(Error::op_at(
                loc,
                "matmul",
                "operands must have at least one axis; use `*` for scalars",
            ));
        }
        let k = self.shape()[ra - 1];
        let kb = if rb == 1 { other.shape()[0] } else { other.shape()[rb - 2] };
        if k != kb {
            return Tensor::from_error(Error::op_at(
                loc,
                "matmul",
                format!(
                    "inner dimensions differ: {} @ {} ({k} vs {kb})",
                    fmt_shape(self.shape()),
                    fmt_shape(other.shape())
                ),
            ));
        }
        match (ra, rb) {
            (1, 1) => (self * other).sum(),
            (_, 1) => (self * other).sum_axes(-1, false),
            (1, _) => (self.unsqueeze(-1) * other).sum_axes(-2, false),
            _ => {
                // (..., m, 1, k) * (..., 1, n, k) summed over k: the reduction reads both
                // operands' rows contiguously.
                let a = self.unsqueeze(-2);
                let b = other.transpose().unsqueeze(-3);
                (a * b).sum_axes(-1, false)
            }
        }
    }

    /// The inner product of two vectors (same as [`Tensor::matmul`] for other ranks).
    #[track_caller]
    pub fn dot(&self, other: &Tensor) -> Tensor {
        self.matmul(other)
    }

    /// The outer product `a[i] * b[j]` of two vectors.
    #[track_caller]
    pub fn outer(&self, other: &Tensor) -> Tensor {
        let loc = SourceLocation::caller();
        if self.error().is_none() && other.error().is_none() && (self.ndim() != 1 || other.ndim() != 1) {
            return Tensor::from_error(Error::op_at(
                loc,
                "outer",
                format!("needs two vectors, got {} and {}", fmt_shape(self.shape()), fmt_shape(other.shape())),
            ));
        }
        self.unsqueeze(-1) * other.unsqueeze(0)
    }
}

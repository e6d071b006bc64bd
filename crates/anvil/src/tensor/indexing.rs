//! Data-dependent indexing: gather and scatter-add with integer index tensors.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result, SourceLocation};
use crate::graph::{Node, NodeRef, Op};
use crate::shape::{fmt_shape, normalize_axes, strides, IntoShape};

fn check_index(loc: SourceLocation, op: &'static str, index: &NodeRef) -> Result<()> {
    if index.dtype.is_int() {
        Ok(())
    } else {
        Err(Error::op_at(loc, op, format!("indices must be an integer tensor, got {}", index.dtype)))
    }
}

impl Tensor {
    /// `out[p] = self.flatten()[index[p]]`: elements picked by position in row-major order.
    /// The result has the index's shape. Indices are clamped into range.
    ///
    /// ```
    /// use anvil::{Tensor, DType, ndarray::array};
    /// let x = Tensor::input(0, [2, 3], DType::F64);
    /// let picked = x.take(&Tensor::from_array(&array![5i64, 0, 2]));
    /// assert_eq!(picked.shape(), &[3]);
    /// ```
    #[track_caller]
    pub fn take(&self, index: &Tensor) -> Tensor {
        let loc = SourceLocation::caller();
        let result = (|| -> Result<NodeRef> {
            let (x, i) = (self.node()?, index.node()?);
            check_index(loc, "take", i)?;
            Ok(Node::make(Op::Gather, x.dtype, i.shape.clone(), vec![x.clone(), i.clone()]))
        })();
        result.map_or_else(Tensor::from_error, Tensor::from_node)
    }

    /// `out[..., p, ...] = self[..., index[..., p, ...], ...]` along `axis` (numpy's
    /// `take_along_axis`, torch's `gather`): `index` has the rank of `self` and, off `axis`,
    /// extents no larger than `self`'s.
    #[track_caller]
    pub fn gather(&self, axis: isize, index: &Tensor) -> Tensor {
        let loc = SourceLocation::caller();
        let result = (|| -> Result<Tensor> {
            let (x, i) = (self.node()?, index.node()?);
            check_index(loc, "gather", i)?;
            let rank = x.shape.len();
            let a = normalize_axes(&[axis], rank).ok_or_else(|| {
                Error::op_at(loc, "gather", format!("axis {axis} is out of range for shape {}", fmt_shape(&x.shape)))
            })?[0];
            let fits = i.shape.len() == rank && (0..rank).all(|d| d == a || i.shape[d] <= x.shape[d]);
            if !fits {
                let message = format!(
                    "index shape {} does not fit source shape {} off axis {a}",
                    fmt_shape(&i.shape),
                    fmt_shape(&x.shape)
                );
                return Err(Error::op_at(loc, "gather", message));
            }
            // Flat position = (offset of the other coordinates) + index * stride of `axis`.
            let st = strides(&x.shape);
            let what = || format!("the positions of a gather with indices of shape {}", fmt_shape(&i.shape));
            let base = crate::array::try_from_shape_fn(what, &i.shape, |p| {
                (0..rank).filter(|&d| d != a).map(|d| (p[d] * st[d]) as i64).sum::<i64>()
            })?;
            let index = index.cast(DType::I64);
            let clamped = index.clip(0.0, x.shape[a].saturating_sub(1) as f64);
            let flat = Tensor::from_array(&base) + clamped * st[a] as f64;
            Ok(self.take(&flat))
        })();
        result.unwrap_or_else(Tensor::from_error)
    }

    /// `out = zeros(shape); out.flatten()[index[p]] += values[p]`: the adjoint of
    /// [`take`](Self::take). Indices are clamped into range.
    ///
    /// ```
    /// use anvil::{Tensor, DType, ndarray::array};
    /// let v = Tensor::input(0, 3, DType::F64);
    /// let hist = Tensor::scatter_add(&v, &Tensor::from_array(&array![1i64, 1, 0]), 2);
    /// assert_eq!(hist.shape(), &[2]);
    /// ```
    #[track_caller]
    pub fn scatter_add(values: &Tensor, index: &Tensor, shape: impl IntoShape) -> Tensor {
        let loc = SourceLocation::caller();
        let shape = shape.into_shape();
        let result = (|| -> Result<NodeRef> {
            let (v, i) = (values.node()?, index.node()?);
            check_index(loc, "scatter_add", i)?;
            if v.shape != i.shape {
                let message =
                    format!("values {} and indices {} must have one shape", fmt_shape(&v.shape), fmt_shape(&i.shape));
                return Err(Error::op_at(loc, "scatter_add", message));
            }
            if v.dtype == DType::Bool {
                return Err(Error::op_at(loc, "scatter_add", "cannot add booleans; cast the values first"));
            }
            super::check_shape(loc, "scatter_add", &shape)?;
            Ok(Node::make(Op::ScatterAdd, v.dtype, shape, vec![v.clone(), i.clone()]))
        })();
        result.map_or_else(Tensor::from_error, Tensor::from_node)
    }
}

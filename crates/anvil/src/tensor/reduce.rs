//! Reductions: `sum`, `prod`, `max`, `min`, `mean`, over all axes or some.

use super::Tensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::error::SourceLocation;
use crate::graph::{Node, Op, ReduceOp};
use crate::shape::{fmt_shape, normalize_axes, IntoAxes};

impl Tensor {
    #[track_caller]
    fn reduce(&self, op: ReduceOp, axes: Option<Vec<isize>>, keepdim: bool, name: &'static str) -> Tensor {
        let loc = SourceLocation::caller();
        self.map_node(|n| {
            let rank = n.shape.len();
            let axes = match axes {
                None => (0..rank).collect(),
                Some(axes) => normalize_axes(&axes, rank).ok_or_else(|| {
                    Error::op_at(
                        loc,
                        name,
                        format!("axes {axes:?} are out of range or repeated for shape {}", fmt_shape(&n.shape)),
                    )
                })?,
            };
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            // Summing booleans counts them, as numpy does.
            let dtype = if n.dtype == DType::Bool && matches!(op, ReduceOp::Sum | ReduceOp::Prod) {
                DType::I64
            } else {
                n.dtype
            };
            let src = Node::make(Op::Cast, dtype, n.shape.clone(), vec![n.clone()]);
            let mut kept = n.shape.clone();
            for &a in &sorted {
                kept[a] = 1;
            }
            let reduced = Node::make(Op::Reduce(op, sorted.clone()), dtype, kept.clone(), vec![src]);
            if keepdim {
                return Ok(reduced);
            }
            let shape = (0..rank).filter(|d| !sorted.contains(d)).map(|d| n.shape[d]).collect();
            Ok(Node::make(Op::Reshape, dtype, shape, vec![reduced]))
        })
    }

    /// Sum of all elements (a scalar).
    #[track_caller]
    pub fn sum(&self) -> Tensor {
        self.reduce(ReduceOp::Sum, None, false, "sum")
    }
    /// Sum over `axes` (negative axes count from the end); `keepdim` keeps them with extent 1.
    ///
    /// ```
    /// use anvil::{Tensor, DType};
    /// let x = Tensor::input(0, [2, 3], DType::F64);
    /// assert_eq!(x.sum_axes(-1, false).shape(), &[2]);
    /// assert_eq!(x.sum_axes([0, 1], true).shape(), &[1, 1]);
    /// ```
    #[track_caller]
    pub fn sum_axes(&self, axes: impl IntoAxes, keepdim: bool) -> Tensor {
        self.reduce(ReduceOp::Sum, Some(axes.into_axes()), keepdim, "sum")
    }
    /// Product of all elements.
    #[track_caller]
    pub fn prod(&self) -> Tensor {
        self.reduce(ReduceOp::Prod, None, false, "prod")
    }
    /// Product over `axes`.
    #[track_caller]
    pub fn prod_axes(&self, axes: impl IntoAxes, keepdim: bool) -> Tensor {
        self.reduce(ReduceOp::Prod, Some(axes.into_axes()), keepdim, "prod")
    }
    /// Largest element (NaN if any is NaN).
    #[track_caller]
    pub fn max(&self) -> Tensor {
        self.reduce(ReduceOp::Max, None, false, "max")
    }
    /// Largest element over `axes`.
    #[track_caller]
    pub fn max_axes(&self, axes: impl IntoAxes, keepdim: bool) -> Tensor {
        self.reduce(ReduceOp::Max, Some(axes.into_axes()), keepdim, "max")
    }
    /// Smallest element (NaN if any is NaN).
    #[track_caller]
    pub fn min(&self) -> Tensor {
        self.reduce(ReduceOp::Min, None, false, "min")
    }
    /// Smallest element over `axes`.
    #[track_caller]
    pub fn min_axes(&self, axes: impl IntoAxes, keepdim: bool) -> Tensor {
        self.reduce(ReduceOp::Min, Some(axes.into_axes()), keepdim, "min")
    }
    /// Mean of all elements (integers give `f64`; an empty tensor gives NaN, as numpy).
    #[track_caller]
    pub fn mean(&self) -> Tensor {
        let n = self.numel() as f64;
        self.as_float().sum() / n
    }
    /// Mean over `axes`.
    #[track_caller]
    pub fn mean_axes(&self, axes: impl IntoAxes, keepdim: bool) -> Tensor {
        let axes = axes.into_axes();
        let count: usize =
            normalize_axes(&axes, self.ndim()).map(|a| a.iter().map(|&d| self.shape()[d]).product()).unwrap_or(1);
        self.as_float().sum_axes(axes, keepdim) / count as f64
    }

    #[track_caller]
    fn as_float(&self) -> Tensor {
        if self.dtype().is_float() {
            self.clone()
        } else {
            self.cast(DType::F64)
        }
    }
}

//! Movement ops: they only rearrange elements, and lowering turns them into index arithmetic.

use super::{nodes_of, Tensor};
use crate::dtype::DType;
use crate::error::SourceLocation;
use crate::error::{Error, Result};
use crate::graph::{Node, NodeRef, Op};
use crate::shape::{fmt_shape, normalize_axes, IntoAxes, IntoShape, Shape};
use ndarray::SliceInfoElem;

impl Tensor {
    /// The same elements in row-major order with a new shape of the same size.
    #[track_caller]
    pub fn reshape(&self, shape: impl IntoShape) -> Tensor {
        let loc = SourceLocation::caller();
        let shape = shape.into_shape();
        self.map_node(|n| {
            super::check_shape(loc, "reshape", &shape)?;
            if shape.iter().product::<usize>() != n.numel() {
                return Err(Error::op_at(
                    loc,
                    "reshape",
                    format!(
                        "cannot reshape {} ({} elements) into {}",
                        fmt_shape(&n.shape),
                        n.numel(),
                        fmt_shape(&shape)
                    ),
                ));
            }
            Ok(Node::make(Op::Reshape, n.dtype, shape, vec![n.clone()]))
        })
    }

    /// All elements as one axis.
    #[track_caller]
    pub fn flatten(&self) -> Tensor {
        self.reshape(self.numel())
    }

    /// Inserts an axis of extent 1 before `axis` (`-1` appends).
    #[track_caller]
    pub fn unsqueeze(&self, axis: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let rank = self.ndim() as isize;
        let a = if axis < 0 { axis + rank + 1 } else { axis };
        if self.error().is_none() && !(0..=rank).contains(&a) {
            return Tensor::from_error(Error::op_at(
                loc,
                "unsqueeze",
                format!("axis {axis} is out of range for shape {}", fmt_shape(self.shape())),
            ));
        }
        let mut shape = self.shape().to_vec();
        shape.insert(a.clamp(0, rank) as usize, 1);
        self.reshape(shape)
    }

    /// Removes the axis `axis`, which must have extent 1.
    #[track_caller]
    pub fn squeeze(&self, axis: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let shape = self.shape().to_vec();
        match normalize_axes(&[axis], shape.len()) {
            Some(a) if shape[a[0]] == 1 => self.reshape(super::without_axis(&shape, a[0])),
            _ if self.error().is_some() => self.clone(),
            _ => Tensor::from_error(Error::op_at(
                loc,
                "squeeze",
                format!("axis {axis} of shape {} is not of extent 1", fmt_shape(&shape)),
            )),
        }
    }

    /// Reorders the axes: output axis `d` is input axis `axes[d]`.
    #[track_caller]
    pub fn permute(&self, axes: impl IntoAxes) -> Tensor {
        let loc = SourceLocation::caller();
        let axes = axes.into_axes();
        self.map_node(|n| {
            let perm = normalize_axes(&axes, n.shape.len()).filter(|p| p.len() == n.shape.len()).ok_or_else(|| {
                Error::op_at(
                    loc,
                    "permute",
                    format!("{axes:?} is not a permutation of the axes of {}", fmt_shape(&n.shape)),
                )
            })?;
            let shape = perm.iter().map(|&p| n.shape[p]).collect();
            Ok(Node::make(Op::Permute(perm), n.dtype, shape, vec![n.clone()]))
        })
    }

    /// Swaps two axes.
    #[track_caller]
    pub fn swap_axes(&self, a: isize, b: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let rank = self.ndim();
        match normalize_axes(&[a], rank).zip(normalize_axes(&[b], rank)) {
            Some((a, b)) => {
                let mut perm: Vec<usize> = (0..rank).collect();
                perm.swap(a[0], b[0]);
                self.permute(perm)
            }
            None if self.error().is_some() => self.clone(),
            None => Tensor::from_error(Error::op_at(
                loc,
                "swap_axes",
                format!("axes {a} and {b} are out of range for shape {}", fmt_shape(self.shape())),
            )),
        }
    }

    /// Swaps the last two axes (a matrix transpose); vectors and scalars are unchanged.
    #[track_caller]
    pub fn transpose(&self) -> Tensor {
        if self.ndim() < 2 {
            return self.clone();
        }
        self.swap_axes(-1, -2)
    }

    /// Broadcasts to `shape` (numpy rules: axes of extent 1 stretch, new axes on the left).
    #[track_caller]
    pub fn expand(&self, shape: impl IntoShape) -> Tensor {
        let loc = SourceLocation::caller();
        let shape = shape.into_shape();
        self.map_node(|n| {
            super::check_shape(loc, "expand", &shape)?;
            let ok = shape.len() >= n.shape.len()
                && n.shape.iter().rev().zip(shape.iter().rev()).all(|(&s, &t)| s == t || s == 1);
            if !ok {
                return Err(Error::op_at(
                    loc,
                    "expand",
                    format!("cannot broadcast {} to {}", fmt_shape(&n.shape), fmt_shape(&shape)),
                ));
            }
            Ok(super::elementwise::expand_to(n, &shape))
        })
    }

    /// Zero padding: `pads[d] = (before, after)` for each axis.
    #[track_caller]
    pub fn pad(&self, pads: &[(usize, usize)]) -> Tensor {
        let loc = SourceLocation::caller();
        self.map_node(|n| {
            if pads.len() != n.shape.len() {
                return Err(Error::op_at(
                    loc,
                    "pad",
                    format!("{} pad pairs given for shape {}", pads.len(), fmt_shape(&n.shape)),
                ));
            }
            let shape: Option<Shape> =
                n.shape.iter().zip(pads).map(|(&s, &(b, a))| s.checked_add(b)?.checked_add(a)).collect();
            let shape = shape.ok_or_else(|| {
                Error::op_at(loc, "pad", format!("padding {pads:?} of shape {} overflows", fmt_shape(&n.shape)))
            })?;
            super::check_shape(loc, "pad", &shape)?;
            Ok(Node::make(Op::Pad(pads.to_vec()), n.dtype, shape, vec![n.clone()]))
        })
    }

    /// The sub-block `ranges[d] = (start, end)` of each axis.
    #[track_caller]
    pub fn shrink(&self, ranges: &[(usize, usize)]) -> Tensor {
        let loc = SourceLocation::caller();
        self.map_node(|n| {
            let ok = ranges.len() == n.shape.len() && ranges.iter().zip(&n.shape).all(|(&(s, e), &d)| s <= e && e <= d);
            if !ok {
                return Err(Error::op_at(
                    loc,
                    "shrink",
                    format!("ranges {ranges:?} do not fit shape {}", fmt_shape(&n.shape)),
                ));
            }
            let shape = ranges.iter().map(|&(s, e)| e - s).collect();
            Ok(Node::make(Op::Shrink(ranges.to_vec()), n.dtype, shape, vec![n.clone()]))
        })
    }

    /// Reverses the order of elements along `axes`.
    #[track_caller]
    pub fn flip(&self, axes: impl IntoAxes) -> Tensor {
        let loc = SourceLocation::caller();
        let axes = axes.into_axes();
        self.map_node(|n| {
            let mut axes = normalize_axes(&axes, n.shape.len()).ok_or_else(|| {
                Error::op_at(loc, "flip", format!("axes {axes:?} are out of range for shape {}", fmt_shape(&n.shape)))
            })?;
            axes.sort_unstable();
            Ok(Node::make(Op::Flip(axes), n.dtype, n.shape.clone(), vec![n.clone()]))
        })
    }

    /// The element or sub-tensor at `index` along the first axis (negative counts from the end).
    #[track_caller]
    pub fn get(&self, index: isize) -> Tensor {
        self.slice([SliceInfoElem::Index(index)])
    }

    /// Numpy-style basic indexing with ndarray's `s![]` syntax: ranges (with steps, negative
    /// steps reverse), integer indices (which drop the axis) and `NewAxis`. Ranges clamp to
    /// the axis like Python's; an integer index out of range is an error.
    ///
    /// ```
    /// use anvil::{Tensor, DType, ndarray::s};
    /// let x = Tensor::input(0, [4, 5], DType::F64);
    /// assert_eq!(x.slice(s![1..3, ..;2]).shape(), &[2, 3]);
    /// assert_eq!(x.slice(s![-1, ..]).shape(), &[5]);
    /// assert!(x.slice(s![4, ..]).check().is_err());
    /// ```
    #[track_caller]
    pub fn slice(&self, info: impl AsRef<[SliceInfoElem]>) -> Tensor {
        let loc = SourceLocation::caller();
        let info = info.as_ref();
        let mut t = self.clone();
        let mut axis = 0usize; // the axis of `t` the next element applies to
        let indexed = info.iter().filter(|e| !matches!(e, SliceInfoElem::NewAxis)).count();
        if self.error().is_none() && indexed > self.ndim() {
            return Tensor::from_error(Error::op_at(
                loc,
                "slice",
                format!("{indexed} indices given for shape {}", fmt_shape(self.shape())),
            ));
        }
        for elem in info {
            t = match *elem {
                SliceInfoElem::NewAxis => {
                    axis += 1;
                    t.unsqueeze(axis as isize - 1)
                }
                SliceInfoElem::Index(i) => t.index_axis(axis, i),
                SliceInfoElem::Slice { start, end, step } => {
                    axis += 1;
                    t.slice_axis(axis - 1, start, end, step)
                }
            };
        }
        t
    }

    #[track_caller]
    fn index_axis(&self, axis: usize, index: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let Some(&n) = self.shape().get(axis) else {
            return self.clone();
        };
        let i = if index < 0 { index + n as isize } else { index };
        if !(0..n as isize).contains(&i) {
            return Tensor::from_error(Error::op_at(
                loc,
                "index",
                format!("index {index} is out of range for axis {axis} of shape {}", fmt_shape(self.shape())),
            ));
        }
        let i = i as usize;
        let mut ranges: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
        ranges[axis] = (i, i + 1);
        self.shrink(&ranges).reshape(super::without_axis(self.shape(), axis))
    }

    #[track_caller]
    fn slice_axis(&self, axis: usize, start: isize, end: Option<isize>, step: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let Some(&n) = self.shape().get(axis) else {
            return self.clone();
        };
        if step == 0 {
            return Tensor::from_error(Error::op_at(loc, "slice", "step must not be zero"));
        }
        let clamp = |v: isize| (if v < 0 { v + n as isize } else { v }).clamp(0, n as isize) as usize;
        let (lo, hi) = (clamp(start), end.map_or(n, clamp));
        let hi = hi.max(lo);
        let mut ranges: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
        ranges[axis] = (lo, hi);
        let mut t = self.shrink(&ranges);
        if step < 0 {
            t = t.flip(axis as isize);
        }
        t.stride_axis(axis, step.unsigned_abs())
    }

    /// Every `step`-th element along `axis`, built from pad, reshape and shrink.
    #[track_caller]
    fn stride_axis(&self, axis: usize, step: usize) -> Tensor {
        if step == 1 {
            return self.clone();
        }
        let shape = self.shape().to_vec();
        let len = shape[axis];
        let count = len.div_ceil(step);
        let mut pads = vec![(0, 0); shape.len()];
        pads[axis] = (0, count * step - len);
        let mut split: Shape = shape[..axis].to_vec();
        split.extend([count, step]);
        split.extend(&shape[axis + 1..]);
        let mut ranges: Vec<(usize, usize)> = split.iter().map(|&d| (0, d)).collect();
        ranges[axis + 1] = (0, 1);
        let mut out = shape.clone();
        out[axis] = count;
        self.pad(&pads).reshape(split).shrink(&ranges).reshape(out)
    }

    /// Joins tensors along an existing axis; all other extents must agree.
    ///
    /// ```
    /// use anvil::{Tensor, DType};
    /// let a = Tensor::input(0, [2, 3], DType::F64);
    /// let b = Tensor::input(1, [1, 3], DType::F64);
    /// assert_eq!(Tensor::cat(&[a, b], 0).shape(), &[3, 3]);
    /// ```
    #[track_caller]
    pub fn cat(tensors: &[Tensor], axis: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let result = (|| -> Result<Tensor> {
            let nodes = nodes_of(tensors)?;
            let first = nodes.first().ok_or_else(|| Error::op_at(loc, "cat", "needs at least one tensor"))?;
            let rank = first.shape.len();
            let a = normalize_axes(&[axis], rank).ok_or_else(|| {
                Error::op_at(loc, "cat", format!("axis {axis} is out of range for shape {}", fmt_shape(&first.shape)))
            })?[0];
            let compatible =
                |n: &NodeRef| n.shape.len() == rank && (0..rank).all(|d| d == a || n.shape[d] == first.shape[d]);
            if let Some(bad) = nodes.iter().find(|n| !compatible(n)) {
                return Err(Error::op_at(
                    loc,
                    "cat",
                    format!("shapes {} and {} differ outside axis {a}", fmt_shape(&first.shape), fmt_shape(&bad.shape)),
                ));
            }
            let total = nodes.iter().try_fold(0usize, |t, n| t.checked_add(n.shape[a]));
            let mut shape = first.shape.clone();
            shape[a] = total.unwrap_or(usize::MAX);
            super::check_shape(loc, "cat", &shape)?;
            Ok(join(tensors, a))
        })();
        result.unwrap_or_else(Tensor::from_error)
    }

    /// Joins tensors of one shape along a new axis.
    #[track_caller]
    pub fn stack(tensors: &[Tensor], axis: isize) -> Tensor {
        let loc = SourceLocation::caller();
        let expanded: Vec<Tensor> = tensors.iter().map(|t| t.unsqueeze(axis)).collect();
        if let Some(first) = tensors.first() {
            if let Some(bad) = tensors.iter().find(|t| t.error().is_none() && t.shape() != first.shape()) {
                return Tensor::from_error(Error::op_at(
                    loc,
                    "stack",
                    format!("shapes {} and {} differ", fmt_shape(first.shape()), fmt_shape(bad.shape())),
                ));
            }
        }
        Tensor::cat(&expanded, axis)
    }
}

/// `pieces` (checked compatible) joined along `axis`: a balanced tree of two-way joins, so
/// every element selects its piece through log(k) `where`s, and code generation splits the
/// loop into one segment per piece. Selection (not a sum of padded pieces) keeps every
/// value's bits, `-0.0` included.
fn join(pieces: &[Tensor], axis: usize) -> Tensor {
    let [first, rest @ ..] = pieces else { unreachable!("cat checks that it has pieces") };
    if rest.is_empty() {
        return first.clone();
    }
    let (left, right) = pieces.split_at(pieces.len() / 2);
    let (left, right) = (join(left, axis), join(right, axis));
    let (width_left, width_right) = (left.shape()[axis], right.shape()[axis]);
    let mut pad_left = vec![(0, 0); left.ndim()];
    pad_left[axis] = (0, width_right);
    let mut pad_right = vec![(0, 0); right.ndim()];
    pad_right[axis] = (width_left, 0);
    let in_left = Tensor::full(left.shape().to_vec(), 1.0, DType::Bool).pad(&pad_left);
    in_left.where_(left.pad(&pad_left), right.pad(&pad_right))
}

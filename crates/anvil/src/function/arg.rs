//! Input and output specifications.

use crate::dtype::DType;
use crate::shape::{IntoShape, Shape};
use std::fmt;

/// The shape and dtype of a function input (or output).
///
/// ```
/// use anvil::{Arg, DType};
/// assert_eq!(Arg::new(1024).shape, vec![1024]);
/// assert_eq!(Arg::new([3, 3]).dtype, DType::F64);
/// assert_eq!(Arg::new(()).shape, Vec::<usize>::new()); // a scalar
/// assert_eq!(Arg::with_dtype(4, DType::F32).dtype, DType::F32);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arg {
    /// Extents, outermost first; empty for a scalar.
    pub shape: Shape,
    /// Element type.
    pub dtype: DType,
}

impl Arg {
    /// An `f64` argument of the given shape.
    pub fn new(shape: impl IntoShape) -> Self {
        Arg { shape: shape.into_shape(), dtype: DType::F64 }
    }

    /// An argument of the given shape and dtype.
    pub fn with_dtype(shape: impl IntoShape, dtype: DType) -> Self {
        Arg { shape: shape.into_shape(), dtype }
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} array of shape {:?}", self.dtype, self.shape)
    }
}

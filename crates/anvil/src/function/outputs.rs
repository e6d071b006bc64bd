//! What a traced function may return.

use crate::error::Result;
use crate::tensor::Tensor;

/// The return value of a traced function: a tensor, a tuple of tensors, a `Vec` or array
/// of tensors, or any of these in a `Result`.
pub trait IntoOutputs {
    /// The output tensors, in order.
    fn into_outputs(self) -> Result<Vec<Tensor>>;
}

impl IntoOutputs for Tensor {
    fn into_outputs(self) -> Result<Vec<Tensor>> {
        Ok(vec![self])
    }
}

impl IntoOutputs for Vec<Tensor> {
    fn into_outputs(self) -> Result<Vec<Tensor>> {
        Ok(self)
    }
}

impl<const N: usize> IntoOutputs for [Tensor; N] {
    fn into_outputs(self) -> Result<Vec<Tensor>> {
        Ok(self.into())
    }
}

impl<O: IntoOutputs> IntoOutputs for Result<O> {
    fn into_outputs(self) -> Result<Vec<Tensor>> {
        self?.into_outputs()
    }
}

macro_rules! tuple_outputs {
    ($($name:ident),+) => {
        impl IntoOutputs for ($(tuple_outputs!(@tensor $name),)+) {
            fn into_outputs(self) -> Result<Vec<Tensor>> {
                let ($($name,)+) = self;
                Ok(vec![$($name),+])
            }
        }
    };
    (@tensor $name:ident) => { Tensor };
}

tuple_outputs!(a);
tuple_outputs!(a, b);
tuple_outputs!(a, b, c);
tuple_outputs!(a, b, c, d);
tuple_outputs!(a, b, c, d, e);
tuple_outputs!(a, b, c, d, e, f);

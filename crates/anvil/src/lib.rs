//! # anvil
//!
//! Write a numerical function with tensor operations, trace it into a graph, and get fast,
//! allocation-free native code: a callable (JIT) or C++ files for your own product (AOT).
//!
//! ```
//! use anvil::{Arg, NumericalFunction, ndarray::Array1};
//! # fn main() -> anvil::Result<()> {
//! let f = NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(1024)])?;
//! let x = Array1::linspace(0.0, 1.0, 1024).into_dyn();
//! let out = f.eval(&[x.view()])?; // reference interpreter; `f.call` runs native code
//! assert_eq!(out[0].shape(), &[] as &[usize]);
//! # Ok(()) }
//! ```
//!
//! The pipeline, one module per stage: [`tensor`] (the DSL) builds [`graph`] nodes;
//! [`transform`] rewrites graphs (derivatives in [`ad`], batching with [`vmap`]);
//! [`lower`] turns a graph into fused loop kernels over a planned workspace; [`render`]
//! prints them as C++; [`jit`] compiles and loads that C++; [`function`] ties it together
//! behind [`NumericalFunction`] and [`generate_module`].
#![warn(missing_docs)]

/// The README's Rust examples, run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

pub mod array;
pub mod dtype;
pub mod error;
pub mod function;
pub mod graph;
pub mod jit;
pub mod lower;
pub mod opti;
pub mod pattern;
pub mod render;
pub mod shape;
pub mod tensor;
pub mod transform;

pub use array::{Element, HostArray};
pub use dtype::DType;
pub use error::{ConstantError, Error, Result, SourceLocation};
pub use function::ad;
pub use function::ad::vmap;
pub use function::{
    generate_module, generate_module_with_constants, Arg, CodegenIntConstant, IntoOutputs, ModuleItem,
    NumericalFunction, SparseNumericalFunction,
};
pub use ndarray;
pub use tensor::Tensor;

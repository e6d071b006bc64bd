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
//! The API: [`NumericalFunction`] (trace, call, evaluate, save), [`Tensor`] (the language
//! a function is written in), [`ad`] (derivatives, sparse ones included) and [`vmap`],
//! [`generate_module`] (AOT C++), [`Backend`] (where a function runs: the CPU, or an NVIDIA
//! GPU through CUDA), [`jit`] (compiler options, the cache, [`jit::cuda`]) and [`opti`] (SQP
//! solvers and multistage problems).
//!
//! Inside, one module per stage (not API; reachable as `anvil::internals` for anvil's own
//! tests): the DSL builds graph nodes, transforms rewrite graphs, lowering turns a graph
//! into fused loop kernels over a planned workspace, rendering prints them as C++, and the
//! JIT compiles and loads that C++ (docs/internals.md).
#![warn(missing_docs)]

/// The README's Rust examples, run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

pub mod backend;
pub mod jit;
pub mod opti;

// The stages live in `internals`; the crate names them from its root.
use internals::{array, dtype, error, function, graph, lower, pattern, render, shape, tensor, transform};

pub use array::{Element, HostArray};
pub use backend::{Backend, CudaOptions};
pub use dtype::DType;
pub use error::{ConstantError, Error, Result, SourceLocation};
pub use function::ad;
pub use function::ad::vmap;
pub use function::{
    check_identifier, derived_name, generate_module, generate_module_with_constants, module_text, Arg,
    CodegenIntConstant, Includes, IntType, IntoOutputs, ModuleItem, NumericalFunction, SparseNumericalFunction,
    MAX_NAME_LEN,
};
pub use lower::LowerOptions;
pub use ndarray;
pub use pattern::{CscMatrix, SparsityPattern};
pub use render::{ItemSource, ModuleText};
pub use tensor::{eval, Tensor};

#[doc(hidden)]
pub mod internals;

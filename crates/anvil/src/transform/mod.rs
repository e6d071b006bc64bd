//! Transforms: graph → graph rewrites whose results are ordinary functions.
//!
//! [`jvp`] (forward mode) and [`vjp`] (reverse mode) hold one rule per primitive;
//! [`vmap`] one batching rule per primitive; [`sparsity`] one dependency rule per
//! primitive. [`ad`] composes them into derivatives of whole functions, [`coloring`] and
//! [`sparse`] into sparse Jacobians and Hessians.

pub mod ad;
pub mod coloring;
pub mod jvp;
pub mod sparse;
pub mod sparsity;
pub mod substitute;
pub mod vjp;
pub mod vmap;

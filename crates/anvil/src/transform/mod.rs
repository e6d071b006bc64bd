//! Transforms: graph → graph rewrites.
//!
//! [`jvp`] (forward mode) and [`vjp`] (reverse mode) hold one rule per primitive; [`vmap`]
//! one batching rule per primitive; [`sparsity`] one dependency rule per primitive.
//! [`derivatives`] composes them into gradients, Jacobians and Hessians (dense and sparse,
//! with [`coloring`], or from the [`bands`] of banded ones) of one tensor with respect to
//! another. The function-level API built
//! on them is [`crate::ad`].

pub mod bands;
pub mod coloring;
pub mod derivatives;
pub mod jvp;
pub mod sparsity;
pub mod vjp;
pub mod vmap;

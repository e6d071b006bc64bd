//! The integration tests, in one binary (one link of the crate instead of one per file):
//! each module is one area, tested through the public API against an oracle.

#[path = "../common/mod.rs"]
mod common;

mod ad;
mod concatenation;
mod cpp_module;
mod cuda;
mod deep_graphs;
mod dependent_crate;
mod errors;
mod jit_constants;
mod jit_trust;
mod limits;
mod lowering;
mod multistage;
mod names;
mod numerics;
mod ops;
mod opti;
mod property;
mod serialization;
mod sparse;
mod threads;
mod vmap;

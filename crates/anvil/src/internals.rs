//! anvil's stages (the graph, lowering, rendering, transforms, ...), reachable for anvil's
//! own tests and benchmarks as `anvil::internals::*`. Not API: anything here may change in
//! any release. The API is what the crate's root, `ad`, `jit` and `opti` export.

#[path = "array.rs"]
pub mod array;
#[path = "dtype.rs"]
pub mod dtype;
#[path = "error.rs"]
pub mod error;
#[path = "function/mod.rs"]
pub mod function;
#[path = "graph/mod.rs"]
pub mod graph;
#[path = "lower/mod.rs"]
pub mod lower;
#[path = "pattern.rs"]
pub mod pattern;
#[path = "render/mod.rs"]
pub mod render;
#[path = "shape.rs"]
pub mod shape;
#[path = "tensor/mod.rs"]
pub mod tensor;
#[path = "transform/mod.rs"]
pub mod transform;

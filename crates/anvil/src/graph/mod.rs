//! The graph IR: hash-consed nodes of primitive ops, their local simplification rules, and
//! the reference interpreter.

mod eval;
mod node;
mod op;
pub mod scalar;
pub mod serial;
mod simplify;
mod substitute;
pub mod verify;

pub use eval::{clamp_index, eval_nodes, reduce_identity};
pub use node::{map_graph, toposort, Node, NodeRef};
pub use op::{BinaryOp, ConstArray, InputRef, Literal, Op, ReduceOp, TraceId, UnaryOp};
pub use simplify::{constant, identity_operand};
pub use substitute::substitute;

//! Functions: tracing, calling through the JIT, and writing C++ modules.

pub mod ad;
mod arg;
mod codegen_constant;
mod cuda;
mod module;
mod names;
mod numerical;
mod outputs;
mod serial;
mod sparse;

pub use arg::Arg;
pub use codegen_constant::{CodegenIntConstant, IntType, Operand};
pub use module::{generate_module, generate_module_with_constants, module_text, Includes, ModuleItem};
pub use names::{check_identifier, derived_name, MAX_NAME_LEN};
pub use numerical::NumericalFunction;
pub use outputs::IntoOutputs;
pub use serial::{FORMAT_VERSION, FUNCTION_FORMAT, TENSOR_FORMAT};
pub use sparse::{sparse_numerical_function, SparseNumericalFunction};

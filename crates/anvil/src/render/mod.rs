//! Rendering: loop nests (kernels scheduled by [`crate::lower::nest`]) → C++ source (the AOT
//! module and the JIT translation unit) and CUDA source ([`cuda`]). The printer ([`kernel`]) takes no decision of its
//! own and spells everything language-specific through a [`dialect`] table.

pub mod cuda;
pub mod dialect;
pub mod kernel;
pub mod module;

pub use cuda::{render_cuda, render_cuda_grid, CudaSource, CUDA_ENTRY};
pub use module::{
    render_function, render_jit, render_module, template_environment, ConstantDecl, ItemSource, ModuleText,
};

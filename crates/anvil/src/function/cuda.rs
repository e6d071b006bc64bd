//! A [`NumericalFunction`] on the CUDA backend: its translation unit, loading, and calls on
//! host arrays. A vmapped function runs its function of one item on every thread (one
//! item each); any other function runs as a batch of one item.

use super::numerical::NumericalFunction;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::jit::cuda::nvrtc_options;
use crate::jit::cuda::{load_emulated, load_gpu, CudaFunction, ItemArg};
use crate::lower::Program;
use crate::render::cuda::CONSTANT_SYMBOL;
use crate::render::cuda::{render_device_function, render_host_code, HostArgument};
use crate::render::{render_cuda, render_cuda_grid, CudaSource};
use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::Arc;

/// How the CUDA code sees a function's batch: the items per call, where each input has the
/// batch axis (`None`, or no entry: one value shared by all items), and where the outputs
/// have it. A function that is no vmap is one item of shared inputs.
struct BatchLayout<'a> {
    items: usize,
    in_axes: &'a [Option<usize>],
    out_axis: usize,
}

impl BatchLayout<'_> {
    /// Where input `i` has the batch axis.
    fn in_axis(&self, i: usize) -> Option<usize> {
        self.in_axes.get(i).copied().flatten()
    }

    /// Whether every batch axis comes first (device arrays can then be read in place).
    fn batch_first(&self) -> bool {
        self.out_axis == 0 && self.in_axes.iter().all(|a| a.is_none_or(|a| a == 0))
    }
}

impl NumericalFunction {
    /// How the CUDA code sees this function's batch (see [`BatchLayout`]).
    fn batch_layout(&self) -> BatchLayout<'_> {
        match self.mapped() {
            Some(m) => BatchLayout { items: m.batch, in_axes: &m.in_axes, out_axis: m.out_axis },
            None => BatchLayout { items: 1, in_axes: &[], out_axis: 0 },
        }
    }

    /// The function the CUDA backend runs per item: the function of one item of a vmapped
    /// function, or this one.
    fn item_function(&self) -> &NumericalFunction {
        self.mapped().map_or(self, |m| &m.item)
    }

    /// The CUDA translation unit of this function (see [`crate::render::cuda`]): for a
    /// vmapped function one thread per item, each running the function of one item; for
    /// any other, each kernel spread over the threads of its own grid.
    pub fn cuda_source(&self) -> CudaSource {
        match self.mapped() {
            Some(mapped) => render_cuda(self.name(), mapped.item.program()),
            None => render_cuda_grid(self.name(), self.program()),
        }
    }

    /// The function of one item as a `__device__` function `call_device` (what
    /// [`generate_module`](crate::generate_module) adds to a CUDA function's namespace, for
    /// your own kernels): one sample per call, in the calling thread.
    pub fn cuda_device_source(&self) -> String {
        render_device_function(self.item_function().program())
    }

    /// The host code of a module that runs this function on a GPU (`gpu::init_ws`,
    /// `gpu::call`; see [`crate::render::cuda::render_host_code`]), or `None` for a vmapped
    /// function whose batch axes are not first (its host call takes batch-first arrays).
    pub fn cuda_host_source(&self) -> Option<String> {
        let source = self.cuda_source();
        let item = self.item_function();
        let layout = self.batch_layout();
        if !layout.batch_first() {
            return None;
        }
        let items = layout.items;
        let bytes = |a: &super::Arg| a.numel() * a.dtype.size();
        let batched = self.mapped().is_some();
        let inputs: Vec<HostArgument> = item
            .inputs()
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let batched = layout.in_axis(i).is_some();
                let stride = if batched { bytes(a) } else { 0 };
                HostArgument { dtype: a.dtype, bytes: if batched { bytes(a) * items } else { bytes(a) }, stride }
            })
            .collect();
        let outputs: Vec<HostArgument> = item
            .outputs()
            .iter()
            .map(|a| HostArgument {
                dtype: a.dtype,
                bytes: bytes(a) * items,
                stride: if batched { bytes(a) } else { 0 },
            })
            .collect();
        let fused = match self.backend() {
            Backend::Cuda(options) => options.fused_multiply_add,
            Backend::Cpu(_) => true,
        };
        let options = nvrtc_options(fused, source.text.len());
        let constants = constants_region(item.program(), source.constant_bytes);
        Some(render_host_code(self.name(), &source, items, (&inputs, &outputs), &constants, &options))
    }

    /// Compiles (or finds in the cache) and loads the CUDA code; a call on the CUDA backend
    /// does this on first use. Fails on a function of another backend, and where CUDA is
    /// unavailable ([`Error::CudaUnavailable`] says what is missing).
    pub fn compile_cuda(&self) -> Result<Arc<CudaFunction>> {
        let Backend::Cuda(options) = self.backend() else {
            return Err(Error::Device {
                function: self.name().into(),
                device: self.backend().name(),
                message: "give it the CUDA backend (`with_backend`) to run it on a GPU".into(),
            });
        };
        let mut slot = self.cuda.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loaded) = slot.as_ref() {
            return Ok(loaded.clone());
        }
        let program = self.item_function().program();
        let source = self.cuda_source();
        let entries: Vec<&str> = source.entries.iter().map(|e| e.name.as_str()).collect();
        let engine = if options.emulate {
            load_emulated(self.name(), &source.text, &options.compiler)?
        } else {
            load_gpu(self.name(), &source.text, &entries, options)?
        };
        let item_arg =
            |a: &super::Arg, shared| ItemArg { bytes: a.numel() * a.dtype.size(), element: a.dtype.size(), shared };
        let item = self.item_function();
        let layout = self.batch_layout();
        let shared = |i: usize| layout.in_axis(i).is_none();
        let loaded = Arc::new(CudaFunction::new(
            self.name(),
            engine,
            item.inputs().iter().enumerate().map(|(i, a)| item_arg(a, shared(i))).collect(),
            item.outputs().iter().map(|a| item_arg(a, self.mapped().is_none())).collect(),
            source.entries.clone(),
            (source.scratch_stride, source.scratch_bytes),
            &constants_region(program, source.constant_bytes),
            source.constant_memory.then_some(CONSTANT_SYMBOL),
        )?);
        *slot = Some(loaded.clone());
        Ok(loaded)
    }

    /// Runs the CUDA code on host memory: `inputs` and `outputs` point at this function's
    /// arguments (declared dtypes and shapes, standard layout).
    ///
    /// # Safety
    /// The pointers must be valid for the arguments' sizes; the outputs exclusively so.
    pub(super) unsafe fn run_cuda(&self, inputs: &[*mut c_void], outputs: &[*mut c_void]) -> Result<()> {
        let cuda = self.compile_cuda()?;
        let bytes = |a: &super::Arg| a.numel() * a.dtype.size();
        let layout = self.batch_layout();
        let (count, out_axis) = (layout.items, layout.out_axis);
        let mut staged: Vec<(Cow<[u8]>, bool)> = Vec::with_capacity(inputs.len());
        for (i, (&pointer, arg)) in inputs.iter().zip(self.inputs()).enumerate() {
            // SAFETY: the caller vouches for the pointer and the size.
            let data = unsafe { std::slice::from_raw_parts(pointer as *const u8, bytes(arg)) };
            staged.push(match layout.in_axis(i) {
                None => (Cow::Borrowed(data), true),
                Some(0) => (Cow::Borrowed(data), false),
                // The batch axis in the middle: gather each item's elements together.
                Some(a) => {
                    let outer = arg.shape[..a].iter().product();
                    (Cow::Owned(swap_leading(data, outer, count, bytes(arg) / (outer * count).max(1))), false)
                }
            });
        }
        let mut results: Vec<Vec<u8>> = Vec::new();
        let mut direct: Vec<&mut [u8]> = Vec::with_capacity(outputs.len());
        for (&pointer, arg) in outputs.iter().zip(self.outputs()) {
            if out_axis == 0 {
                // SAFETY: as above, exclusively.
                direct.push(unsafe { std::slice::from_raw_parts_mut(pointer as *mut u8, bytes(arg)) });
            } else {
                results.push(vec![0; bytes(arg)]);
            }
        }
        let mut targets: Vec<&mut [u8]> =
            if out_axis == 0 { direct } else { results.iter_mut().map(|r| r.as_mut_slice()).collect() };
        let ins: Vec<(&[u8], bool)> = staged.iter().map(|(d, shared)| (d.as_ref(), *shared)).collect();
        cuda.call_host(count, &ins, &mut targets)?;
        if out_axis != 0 {
            for ((result, &pointer), arg) in results.iter().zip(outputs).zip(self.outputs()) {
                let outer: usize = arg.shape[..out_axis].iter().product();
                let moved = swap_leading(result, count, outer, bytes(arg) / (outer * count).max(1));
                // SAFETY: as above; `moved` has the output's size.
                unsafe { std::ptr::copy_nonoverlapping(moved.as_ptr(), pointer as *mut u8, moved.len()) };
            }
        }
        Ok(())
    }
}

impl NumericalFunction {
    /// Runs the CUDA code on device memory: one device address per input, then per output,
    /// each a C-contiguous array of the argument's declared dtype and shape. A vmapped
    /// function's arrays must have the batch axis first (`in_axes` 0 or `None`, `out_axis`
    /// 0): the items are then read and written in place, and nothing is allocated on the
    /// host once the first call has sized the scratch memory.
    ///
    /// ```no_run
    /// use anvil::{jit::cuda::Context, vmap, Arg, Backend, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("f", |[x]| x.sin() * 2.0, [Arg::new(4)])?.with_backend(Backend::parse("CUDA")?);
    /// let batch = vmap(&f, 1000, &[])?;
    /// let gpu = Context::open(0)?;
    /// let (x, y) = (gpu.alloc(1000 * 4 * 8)?, gpu.alloc(1000 * 4 * 8)?);
    /// x.copy_from_host(&vec![0u8; 1000 * 4 * 8])?;
    /// // SAFETY: x and y hold 1000 items of 4 doubles on the function's GPU.
    /// unsafe { batch.call_device(&[x.ptr(), y.ptr()])? };
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// Each address must be device memory of the function's GPU (host memory, under the
    /// emulation) holding its argument; the outputs must not alias anything else.
    pub unsafe fn call_device(&self, arguments: &[u64]) -> Result<()> {
        let cuda = self.compile_cuda()?;
        let layout = self.batch_layout();
        let (count, in_axes, out_axis) = (layout.items, layout.in_axes, layout.out_axis);
        if !layout.batch_first() {
            return Err(Error::Device {
                function: self.name().into(),
                device: self.backend().name(),
                message: format!(
                    "a call on device arrays needs the batch axis first (in_axes {in_axes:?}, out_axis {out_axis}): \
                     vmap with in_axes 0 or None and out_axis 0, or call it on host arrays"
                ),
            });
        }
        // SAFETY: as the caller vouches.
        unsafe { cuda.call_device(count, arguments) }
    }
}

/// `data` as `[d0][d1][chunk bytes]`, returned as `[d1][d0][chunk]`.
fn swap_leading(data: &[u8], d0: usize, d1: usize, chunk: usize) -> Vec<u8> {
    let mut out = vec![0; data.len()];
    for i in 0..d0 {
        for j in 0..d1 {
            let from = (i * d1 + j) * chunk;
            let to = (j * d0 + i) * chunk;
            out[to..to + chunk].copy_from_slice(&data[from..from + chunk]);
        }
    }
    out
}

/// The captured constants at their workspace offsets, `bytes` in all (what all threads read).
fn constants_region(program: &Program, bytes: usize) -> Vec<u8> {
    let mut region = vec![0; bytes];
    for (_, data, offset) in program.constants() {
        let bytes = data.bytes();
        region[offset..offset + bytes.len()].copy_from_slice(&bytes);
    }
    region
}

//! A function's CUDA code, loaded: the entry point of [`crate::render::cuda`], its shared
//! constants, and the scratch and staging memory of its calls, on a GPU or on the CPU's
//! emulation of one ([`Engine`]).

use super::driver::{Context, DeviceBuffer, Kernel, Module};
use crate::error::{Error, Result};
use crate::jit::Library;
use crate::render::cuda::CudaEntry;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// The emulated launch: entry point, grid, block, the packed arguments.
type Emulate = unsafe extern "C" fn(u32, u32, u32, *const c_void);

/// What runs the entry point.
pub(crate) enum Engine {
    /// A GPU, through the driver.
    Gpu {
        /// The device's primary context.
        context: Arc<Context>,
        /// The module of `kernels`.
        module: Arc<Module>,
        /// The entry points, in launch order.
        kernels: Vec<Kernel>,
    },
    /// The CPU, running the grid's threads one after another (see `emulation.hpp`).
    Emulated {
        /// Keeps `launch` loaded.
        _library: Library,
        /// The emulated launch.
        launch: Emulate,
    },
}

/// Memory the entry point can address: on the device, or (emulated) on the host, 8-byte
/// aligned.
enum Memory {
    Gpu(DeviceBuffer),
    Host(Vec<u64>),
}

impl Memory {
    fn ptr(&self) -> u64 {
        match self {
            Memory::Gpu(b) => b.ptr(),
            Memory::Host(v) => v.as_ptr() as u64,
        }
    }

    fn len(&self) -> usize {
        match self {
            Memory::Gpu(b) => b.len(),
            Memory::Host(v) => v.len() * 8,
        }
    }

    fn write(&mut self, data: &[u8]) -> Result<()> {
        match self {
            Memory::Gpu(b) => b.copy_from_host(data),
            Memory::Host(v) => {
                // SAFETY: `v` holds at least `data.len()` bytes (checked by the caller's
                // sizing), and a Vec<u64> is valid for any bytes.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), v.as_mut_ptr().cast::<u8>(), data.len()) };
                Ok(())
            }
        }
    }

    fn read(&self, out: &mut [u8]) -> Result<()> {
        match self {
            Memory::Gpu(b) => b.copy_to_host(out),
            Memory::Host(v) => {
                // SAFETY: as in `write`.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), out.as_mut_ptr(), out.len()) };
                Ok(())
            }
        }
    }
}

impl Engine {
    fn alloc(&self, bytes: usize) -> Result<Memory> {
        match self {
            Engine::Gpu { context, .. } => context.alloc(bytes).map(Memory::Gpu),
            Engine::Emulated { .. } => {
                crate::array::check_alloc(|| "the emulated device memory".to_string(), bytes, 1)?;
                Ok(Memory::Host(vec![0; bytes.div_ceil(8)]))
            }
        }
    }

    /// Writes `data` into the module's global `symbol` (a `__constant__` array).
    fn write_symbol(&self, symbol: &str, data: &[u8]) -> Result<()> {
        match self {
            Engine::Gpu { module, .. } => module.write_global(symbol, data),
            Engine::Emulated { _library: library, .. } => {
                // SAFETY: the emulation defines `symbol` as a byte array of the region's size
                // (the same translation unit sized it), which nothing else writes.
                unsafe {
                    let address = library.symbol::<*mut u8>(symbol)?;
                    std::ptr::copy_nonoverlapping(data.as_ptr(), address, data.len());
                }
                Ok(())
            }
        }
    }

    /// Most blocks worth launching at once (more would only queue): enough to fill every
    /// multiprocessor; the emulator takes few, so that its grid-stride loops wrap.
    fn max_grid(&self, block: u32) -> u32 {
        match self {
            Engine::Gpu { context, .. } => (context.multiprocessors().max(1) as u32) * (2048 / block).max(1),
            Engine::Emulated { .. } => 3,
        }
    }

    /// Threads per block of entry point `entry`.
    fn block(&self, entry: usize) -> u32 {
        match self {
            // Whole warps: a warp per item needs its lanes in one block.
            Engine::Gpu { kernels, .. } => (kernels[entry].max_threads_per_block().max(32) as u32).min(128) / 32 * 32,
            Engine::Emulated { .. } => 64,
        }
    }

    /// Queues entry point `entry` on `args` (the emulation runs it at once).
    ///
    /// # Safety
    /// `args` must be the entry point's packed parameter, its pointers valid for what the
    /// kernel reads and writes until the device is synchronised.
    unsafe fn launch(&self, entry: usize, grid: u32, block: u32, args: &[u64]) -> Result<()> {
        match self {
            Engine::Gpu { kernels, .. } => {
                let mut params = [args.as_ptr() as *mut c_void];
                // SAFETY: the kernel's one parameter is the struct `args` packs (as the caller
                // vouches); the driver copies it when the launch is queued.
                unsafe { kernels[entry].launch(grid, block, &mut params) }
            }
            Engine::Emulated { launch, .. } => {
                // SAFETY: as above.
                unsafe { launch(entry as u32, grid, block, args.as_ptr().cast()) };
                Ok(())
            }
        }
    }

    /// Waits for what was queued.
    fn wait(&self) -> Result<()> {
        match self {
            Engine::Gpu { context, .. } => context.finish_launches(),
            Engine::Emulated { .. } => Ok(()),
        }
    }
}

/// An argument of the function, per item.
#[derive(Clone, Copy, Debug)]
pub struct ItemArg {
    /// Bytes of one item's value.
    pub bytes: usize,
    /// Bytes of one element.
    pub element: usize,
    /// Whether all items share one value (an input vmapped with no batch axis).
    pub shared: bool,
}

/// The memory calls reuse (grown as batches grow), and the packed parameter.
struct Staging {
    scratch: Option<Memory>,
    arguments: Vec<Option<Memory>>,
    words: Vec<u64>,
}

/// A function compiled for CUDA and loaded: call it on host arrays ([`call_host`]) or on
/// device memory ([`call_device`]), on any number of items.
///
/// [`call_host`]: CudaFunction::call_host
/// [`call_device`]: CudaFunction::call_device
pub struct CudaFunction {
    name: String,
    engine: Engine,
    inputs: Vec<ItemArg>,
    outputs: Vec<ItemArg>,
    /// The entry points: each one's threads' worth, and whether it needs them all at once.
    entries: Vec<CudaEntry>,
    scratch_stride: usize,
    scratch_bytes: usize,
    constants: Memory,
    /// One call at a time uses the staging memory (calls from several threads queue here).
    staging: Mutex<Staging>,
}

impl CudaFunction {
    /// Loads the function: its engine, its arguments per item, what its entry points are
    /// worth, the scratch bytes a thread needs and all share, and the constants region
    /// (`constants`: bytes at their offsets), written into the module's `__constant__`
    /// array `constant_symbol` or else into device memory.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        name: &str,
        engine: Engine,
        inputs: Vec<ItemArg>,
        outputs: Vec<ItemArg>,
        entries: Vec<CudaEntry>,
        (scratch_stride, scratch_bytes): (usize, usize),
        constants: &[u8],
        constant_symbol: Option<&str>,
    ) -> Result<CudaFunction> {
        let mut region = engine.alloc(if constant_symbol.is_some() { 0 } else { constants.len() })?;
        match constant_symbol {
            Some(symbol) => engine.write_symbol(symbol, constants)?,
            None if !constants.is_empty() => region.write(constants)?,
            None => {}
        }
        let arguments = (0..inputs.len() + outputs.len()).map(|_| None).collect();
        let staging = Staging { scratch: None, arguments, words: Vec::new() };
        Ok(CudaFunction {
            name: name.into(),
            engine,
            inputs,
            outputs,
            entries,
            scratch_stride,
            scratch_bytes,
            constants: region,
            staging: Mutex::new(staging),
        })
    }

    /// Waits until the device has finished all work queued on it, on every stream (what a
    /// call on arrays another stream wrote must do first).
    pub fn synchronize(&self) -> Result<()> {
        match &self.engine {
            Engine::Gpu { context, .. } => context.synchronize(),
            Engine::Emulated { .. } => Ok(()),
        }
    }

    /// Whether this function runs on the CPU's emulation of a GPU.
    pub fn is_emulated(&self) -> bool {
        matches!(self.engine, Engine::Emulated { .. })
    }

    /// Runs `count` items on host arrays: an input holds one item (when `shared`) or
    /// `count` items back to back, as `(bytes, shared)`; each output receives `count` items
    /// back to back.
    pub fn call_host(&self, count: usize, inputs: &[(&[u8], bool)], outputs: &mut [&mut [u8]]) -> Result<()> {
        self.check_host(count, inputs, outputs)?;
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let Staging { arguments, .. } = &mut *staging;
        let mut pointers = Vec::with_capacity(arguments.len());
        for (k, ((data, _), slot)) in inputs.iter().zip(arguments.iter_mut()).enumerate() {
            let memory = ensure(&self.engine, slot, data.len().max(8))?;
            if !data.is_empty() {
                memory.write(data)?;
            }
            pointers.push((memory.ptr(), if inputs[k].1 { 0 } else { self.inputs[k].bytes }));
        }
        for (k, out) in outputs.iter().enumerate() {
            let memory = ensure(&self.engine, &mut arguments[self.inputs.len() + k], out.len().max(8))?;
            pointers.push((memory.ptr(), self.outputs[k].bytes));
        }
        self.launch(&mut staging, count, pointers.into_iter())?;
        for (k, out) in outputs.iter_mut().enumerate() {
            if let Some(memory) = &staging.arguments[self.inputs.len() + k] {
                memory.read(out)?;
            }
        }
        Ok(())
    }

    /// Runs `count` items on device memory: the address of each input then each output,
    /// holding `count` items back to back (one, for a shared input). Allocates nothing once
    /// the scratch memory has grown to the batch.
    ///
    /// # Safety
    /// Each address must be device memory of this function's device holding its items, of
    /// the argument's dtype.
    pub unsafe fn call_device(&self, count: usize, arguments: &[u64]) -> Result<()> {
        let expected = self.inputs.len() + self.outputs.len();
        if arguments.len() != expected {
            let function = format!("{} (device arguments: inputs, then outputs)", self.name);
            return Err(Error::ArgumentCount { function, expected, got: arguments.len() });
        }
        let specs = self.inputs.iter().chain(&self.outputs);
        let strided =
            arguments.iter().zip(specs).map(|(&address, spec)| (address, if spec.shared { 0 } else { spec.bytes }));
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        self.launch(&mut staging, count, strided)
    }

    /// Packs the parameter (strides in elements) and runs each entry point's grid.
    fn launch(&self, staging: &mut Staging, count: usize, arguments: impl Iterator<Item = (u64, usize)>) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let grid = |entry: usize| {
            let block = self.engine.block(entry);
            let CudaEntry { threads, exact, lanes, .. } = &self.entries[entry];
            let blocks = threads.unwrap_or(count * lanes).max(1).div_ceil(block as usize) as u64;
            let most = if *exact { u64::from(u32::MAX) } else { u64::from(self.engine.max_grid(block)) };
            (blocks.min(most) as u32, block)
        };
        let threads = (0..self.entries.len())
            .map(|entry| {
                let (blocks, block) = grid(entry);
                blocks as usize * block as usize
            })
            .max()
            .unwrap_or(0);
        let scratch_bytes = self.scratch_bytes + self.scratch_stride * threads;
        let scratch = ensure(&self.engine, &mut staging.scratch, scratch_bytes.max(8))?.ptr();
        let specs = self.inputs.iter().chain(&self.outputs);
        staging.words.clear();
        staging.words.extend([count as u64, scratch, self.constants.ptr()]);
        for ((address, stride), spec) in arguments.zip(specs) {
            staging.words.extend([address, (stride / spec.element.max(1)) as u64]);
        }
        for entry in 0..self.entries.len() {
            let (blocks, block) = grid(entry);
            // SAFETY: the words are the entry points' parameter in its declared order; the
            // buffers hold what the strides and count say (checked or vouched for by callers).
            unsafe { self.engine.launch(entry, blocks, block, &staging.words)? };
        }
        self.engine.wait()
    }

    fn check_host(&self, count: usize, inputs: &[(&[u8], bool)], outputs: &[&mut [u8]]) -> Result<()> {
        let count_error = |what: &str, expected, got| Error::ArgumentCount {
            function: format!("{} ({what})", self.name),
            expected,
            got,
        };
        if inputs.len() != self.inputs.len() {
            return Err(count_error("inputs", self.inputs.len(), inputs.len()));
        }
        if outputs.len() != self.outputs.len() {
            return Err(count_error("outputs", self.outputs.len(), outputs.len()));
        }
        let sizes = inputs.iter().map(|(data, shared)| (data.len(), if *shared { 1 } else { count }));
        let sizes = sizes.chain(outputs.iter().map(|data| (data.len(), count)));
        for (k, ((bytes, items), spec)) in sizes.zip(self.inputs.iter().chain(&self.outputs)).enumerate() {
            if bytes != spec.bytes * items {
                return Err(Error::InputMismatch {
                    function: self.name.clone(),
                    index: k,
                    expected: format!("{items} item(s) of {} bytes (argument {k}: inputs, then outputs)", spec.bytes),
                    got: format!("{bytes} bytes"),
                });
            }
        }
        Ok(())
    }
}

/// `slot`'s memory, reallocated if it holds fewer than `bytes`.
fn ensure<'a>(engine: &Engine, slot: &'a mut Option<Memory>, bytes: usize) -> Result<&'a mut Memory> {
    let memory = match slot.take() {
        Some(memory) if memory.len() >= bytes => memory,
        _ => engine.alloc(bytes)?,
    };
    Ok(slot.insert(memory))
}

impl std::fmt::Debug for CudaFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaFunction").field("name", &self.name).field("emulated", &self.is_emulated()).finish()
    }
}

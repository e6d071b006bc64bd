//! The CUDA translation unit of a function: its kernels as device functions (printed
//! through the [`CUDA`] dialect by the same printer as C++), in one of two forms. A vmapped
//! function is run by one `__global__` entry in which each thread evaluates the whole
//! program of one item on items of the batch ([`render_cuda`]); any other runs its kernels
//! one after another, each an entry whose threads share its work ([`render_cuda_grid`]).
//! A module gets the function of one item as a `__device__` function
//! ([`render_device_function`]) and, for host code, NVRTC and launches ([`render_host_code`]).
//!
//! One thread per item is the form that serves batched evaluation best (a warp per item where
//! long reductions are most of an item's work: its lanes share them): loops stay loops
//! (only small ones are unrolled, so that their arrays can live in registers), the batch
//! size is a run-time argument (one CUBIN serves every batch size), and items never
//! synchronise. The intermediates of a thread live in memory of its own (`Scratch`):
//! local arrays when they are few (up to `LOCAL_SCRATCH_LIMIT` bytes), else a global region
//! of `scratch_stride` bytes per thread of the grid; the captured constants are one region
//! all threads read.

use super::dialect::CUDA;
use super::kernel::render_kernel;
use super::module::{kernels, template_environment};
use crate::dtype::DType;
use crate::lower::nest::grid::{split_reductions, warp_per_item, WARP};
use crate::lower::nest::{schedule, verify, Form};
use crate::lower::workspace::scratch_layout;
use crate::lower::{BufferKind, Expr, Program};
use minijinja::context;
use std::sync::OnceLock;

/// The name of the entry point of every CUDA translation unit.
pub const CUDA_ENTRY: &str = "anvil_batch";

/// The alignment of each intermediate in a thread's scratch region, and of the region.
const SCRATCH_ALIGN: usize = 16;

/// The most bytes of intermediates a thread keeps in local memory. Local memory is
/// interleaved across a warp by the hardware (a warp's accesses to one element coalesce) and
/// needs no allocation of ours, but the driver reserves it for every thread the GPU can hold
/// at once (4 KiB: about 1 GiB on a 132-multiprocessor GPU); beyond it, a global region of
/// `scratch_stride` bytes per thread of the grid.
const LOCAL_SCRATCH_LIMIT: usize = 4096;

/// The most bytes of captured constants kept in `__constant__` memory: there, a warp's
/// reads of one address (every thread's loop at the same point) are one broadcast, and an
/// unrolled loop's reads become operands of the arithmetic itself, but only while they fit
/// its cache. Measured on an H200: the MLP 16-64-64-4's 44 KB of weights ran 1.4 times
/// slower from constant memory than from global memory (through L1).
const CONSTANT_MEMORY_LIMIT: usize = 4 * 1024;

/// The `__constant__` array holding the captured constants, where they fit.
pub const CONSTANT_SYMBOL: &str = "anvil_constants";

/// A function's CUDA source and the layout its launcher packs.
///
/// The entry point takes one struct of 64-bit words: the item count, the scratch base, the
/// constants' base, then a pointer and an item stride (in elements) for each input in
/// order, then for each output in order. Item `k` reads input `i` at `in_i + k * stride_i`
/// (a stride of 0 shares one input among all items).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaSource {
    /// The CUDA C++ text (no headers: NVRTC needs none).
    pub text: String,
    /// Bytes of global scratch memory each thread of the grid needs (0: none, or its
    /// intermediates fit in local memory).
    pub scratch_stride: usize,
    /// Bytes of the captured constants' region (each at its offset in
    /// [`Program::constants`]).
    pub constant_bytes: usize,
    /// Whether that region is the `__constant__` array [`CONSTANT_SYMBOL`] (else the
    /// entry point's `constants` pointer).
    pub constant_memory: bool,
    /// Bytes of one global scratch region all threads share (the grid form's workspace).
    pub scratch_bytes: usize,
    /// The `__global__` entry points, launched in order on the same arguments.
    pub entries: Vec<CudaEntry>,
}

/// An entry point of a CUDA translation unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaEntry {
    /// Its name.
    pub name: String,
    /// How many threads it is worth (`None`: one per item of the call).
    pub threads: Option<usize>,
    /// Whether it needs all of them at once (a split reduction's partials), not fewer in a
    /// grid-stride loop.
    pub exact: bool,
    /// Threads per item of a batched function: 1, or a warp's when each item's long
    /// reductions are dealt over its lanes ([`warp_per_item`]).
    pub lanes: usize,
}

/// Bytes of the captured constants' region: the workspace layout puts them first.
pub fn constant_bytes(program: &Program) -> usize {
    program.constants().map(|(b, _, offset)| offset + program.buffers[b].nbytes()).max().unwrap_or(0)
}

/// Whether every read of a captured constant is at an index of the loop variables alone:
/// the same for all threads at each point (a gathered read, at an index computed from an
/// item's data, is not).
fn constants_read_uniformly(program: &Program) -> bool {
    let constant = |b: usize| matches!(program.buffers[b].kind, BufferKind::Constant(_));
    program
        .kernels
        .iter()
        .flat_map(|k| &k.exprs)
        .all(|e| !matches!(e, Expr::Gather { buffer, .. } if constant(*buffer)))
}

/// The pointer kernel calls pass for buffer `b` of item `item`.
fn pointer(program: &Program, scratch: &Scratch, constant_memory: bool, b: usize) -> String {
    let buffer = &program.buffers[b];
    let cpp = CUDA.type_name(buffer.dtype);
    let batched = !matches!(scratch, Scratch::Workspace);
    match &buffer.kind {
        BufferKind::Input(i) if batched => format!("a.in{i} + item * a.in{i}_stride"),
        BufferKind::Output(k) if batched => format!("a.out{k} + item * a.out{k}_stride"),
        BufferKind::Input(_) | BufferKind::Output(_) => format!("a.{}", argument_name(&buffer.kind)),
        BufferKind::Constant(_) => {
            let offset = program.offsets[b].expect("constants that kernels read have offsets");
            let base = if constant_memory { CONSTANT_SYMBOL } else { "a.constants" };
            format!("reinterpret_cast<const {cpp}*>({base} + {offset})")
        }
        BufferKind::Intermediate => match scratch {
            Scratch::Arrays => format!("s{b}"),
            Scratch::Shared { offsets, .. } | Scratch::Global { offsets, .. } => {
                let offset = offsets[b].expect("intermediates have scratch offsets");
                format!("reinterpret_cast<{cpp}*>(ws + {offset})")
            }
            Scratch::Workspace => {
                let offset = program.offsets[b].expect("intermediates have workspace offsets");
                format!("reinterpret_cast<{cpp}*>(a.scratch + {offset})")
            }
        },
    }
}

/// Where a thread keeps its intermediates.
enum Scratch {
    /// A local array per intermediate: the compiler keeps in registers each one whose
    /// indices it knows (all, after unrolling), and the others in local memory.
    Arrays,
    /// One local array of `bytes`, the intermediates at `offsets` (reusing the bytes of
    /// those no longer needed).
    Shared { offsets: Vec<Option<usize>>, bytes: usize },
    /// A global region of `stride` bytes per thread of the grid.
    Global { offsets: Vec<Option<usize>>, stride: usize },
    /// One global region all threads share, the intermediates at the workspace's offsets
    /// (the grid form, whose threads share each kernel's work).
    Workspace,
}

impl Scratch {
    /// Separate arrays if they fit the local memory budget; else one array with reuse if
    /// that does; else global memory.
    fn of(program: &Program) -> Scratch {
        let separate: usize = program
            .buffers
            .iter()
            .filter(|b| matches!(b.kind, BufferKind::Intermediate))
            .map(|b| b.nbytes().div_ceil(SCRATCH_ALIGN) * SCRATCH_ALIGN)
            .sum();
        let (offsets, bytes) = scratch_layout(&program.buffers, &program.kernels, SCRATCH_ALIGN);
        if separate <= LOCAL_SCRATCH_LIMIT {
            Scratch::Arrays
        } else if bytes <= LOCAL_SCRATCH_LIMIT {
            Scratch::Shared { offsets, bytes }
        } else {
            Scratch::Global { offsets, stride: bytes }
        }
    }

    /// The declarations at the top of the entry point.
    fn declarations(&self, program: &Program) -> Vec<String> {
        match self {
            Scratch::Arrays => program
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, b)| matches!(b.kind, BufferKind::Intermediate) && b.numel() > 0)
                .map(|(i, b)| format!("{} s{i}[{}];", CUDA.type_name(b.dtype), b.numel()))
                .collect(),
            Scratch::Shared { bytes: 0, .. } | Scratch::Global { stride: 0, .. } | Scratch::Workspace => Vec::new(),
            Scratch::Shared { bytes, .. } => vec![format!("alignas(16) char ws[{bytes}];")],
            // A region per thread (not per item: the lanes of a warp on one item each have one).
            Scratch::Global { stride, .. } => vec![format!(
                "char* const ws = a.scratch + (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * {stride}LL;"
            )],
        }
    }

    /// Bytes of global scratch per thread of the grid.
    fn global_stride(&self) -> usize {
        match self {
            Scratch::Global { stride, .. } => *stride,
            _ => 0,
        }
    }
}

/// The name of a function argument in CUDA code: `in<i>`, `out<k>`.
fn argument_name(kind: &BufferKind) -> String {
    match kind {
        BufferKind::Input(i) => format!("in{i}"),
        BufferKind::Output(k) => format!("out{k}"),
        _ => unreachable!("only arguments have argument names"),
    }
}

/// The fields of `anvil_args` after the first three: a pointer and a stride per argument.
fn fields(program: &Program) -> Vec<String> {
    let field = |dtype: DType, mutable: bool, name: String| {
        let pointee = CUDA.pointee(dtype, mutable);
        [format!("{pointee}* {name};"), format!("long long {name}_stride;")]
    };
    let inputs = program.inputs().map(|(_, b)| (b, false));
    let outputs = program.outputs().map(|(_, b)| (b, true));
    inputs.chain(outputs).flat_map(|(b, mutable)| field(b.dtype, mutable, argument_name(&b.kind))).collect()
}

/// The CUDA translation unit of a batched function `name`: `program` is its function of
/// one item, each thread runs it whole on items of a grid-stride loop (see [`CudaSource`]).
pub fn render_cuda(name: &str, program: &Program) -> CudaSource {
    let scratch = Scratch::of(program);
    let fast = |op, dtype| CUDA.has_fast_unary(op, dtype);
    let nests: Vec<_> = program.kernels.iter().map(|kernel| schedule(kernel, Form::Loops, fast)).collect();
    let (body, lanes) = match warp_per_item(&nests) {
        Some(warp) => {
            let dtypes: Vec<DType> = program.buffers.iter().map(|b| b.dtype).collect();
            let body: String = warp
                .iter()
                .enumerate()
                .map(|(k, nest)| {
                    crate::lower::debug_verify("dealing reductions over a warp", || verify(nest, &program.kernels[k]));
                    render_kernel(nest, &format!("kernel{k}"), &dtypes, &CUDA)
                })
                .collect();
            (body.trim_end().to_string(), WARP)
        }
        None => (kernels(program, false, &CUDA), 1),
    };
    let constant_memory = constant_placement(program).1;
    let calls = (0..program.kernels.len())
        .map(|k| CUDA.call(&format!("kernel{k}"), &kernel_pointers(program, &scratch, constant_memory, k)))
        .collect();
    let entry = CudaEntry { name: CUDA_ENTRY.to_string(), threads: None, exact: false, lanes };
    assemble(name, program, scratch, body, vec![entry], calls)
}

/// The CUDA translation unit of function `name`'s `program` run once, each kernel its own
/// `__global__` entry whose threads share its work (scheduled as
/// [`Form::Grid`](crate::lower::nest::grid)), the intermediates in one global workspace.
pub fn render_cuda_grid(name: &str, program: &Program) -> CudaSource {
    let dtypes: Vec<DType> = program.buffers.iter().map(|b| b.dtype).collect();
    let fast = |op, dtype| CUDA.has_fast_unary(op, dtype);
    let constant_memory = constant_placement(program).1;
    // A split reduction's partials follow the workspace.
    let partials_at = program.workspace_size.div_ceil(SCRATCH_ALIGN) * SCRATCH_ALIGN;
    let (mut body, mut entries, mut calls, mut partial_bytes) = (String::new(), Vec::new(), Vec::new(), 0);
    for (k, kernel) in program.kernels.iter().enumerate() {
        let launches = split_reductions(schedule(kernel, Form::Grid, fast));
        for (l, nest) in launches.iter().enumerate() {
            crate::lower::debug_verify("splitting reductions", || verify(nest, kernel));
            let function = if launches.len() == 1 { format!("kernel{k}") } else { format!("kernel{k}_{l}") };
            body += &render_kernel(nest, &function, &dtypes, &CUDA);
            let mut args = kernel_pointers(program, &Scratch::Workspace, constant_memory, k);
            if nest.partial_bytes > 0 {
                args.push(format!("a.scratch + {partials_at}"));
            }
            calls.push(CUDA.call(&function, &args));
            entries.push(CudaEntry {
                name: format!("anvil_{function}"),
                threads: Some(nest.threads),
                exact: nest.exact_threads,
                lanes: 1,
            });
            partial_bytes = partial_bytes.max(nest.partial_bytes);
        }
    }
    let mut source = assemble(name, program, Scratch::Workspace, body.trim_end().to_string(), entries, calls);
    source.scratch_bytes = if partial_bytes > 0 { partials_at + partial_bytes } else { program.workspace_size };
    source
}

/// The pointers kernel `k` of `program` is called with (outputs, then inputs).
fn kernel_pointers(program: &Program, scratch: &Scratch, constant_memory: bool, k: usize) -> Vec<String> {
    let kernel = &program.kernels[k];
    let buffers = kernel.outputs.iter().copied().chain(kernel.inputs());
    buffers.map(|b| pointer(program, scratch, constant_memory, b)).collect()
}

/// The bytes of `program`'s constants region, and whether it is `__constant__` memory.
fn constant_placement(program: &Program) -> (usize, bool) {
    let bytes = constant_bytes(program);
    (bytes, bytes > 0 && bytes <= CONSTANT_MEMORY_LIMIT && constants_read_uniformly(program))
}

/// The code of `program` as a `__device__` function `call_device` of one item for a module's
/// header, taking a pointer per input then per output (C-contiguous, the declared dtypes):
/// what your own kernels call, one sample per thread. Compiled only by CUDA compilers (and the
/// emulation); the constants are `static __device__` arrays of their bits.
pub fn render_device_function(program: &Program) -> String {
    let scratch = match Scratch::of(program) {
        Scratch::Global { offsets, stride } => Scratch::Shared { offsets, bytes: stride },
        other => other,
    };
    let mut constants = String::new();
    for (b, data, _) in program.constants() {
        let (bits, integer) = constant_bits(data.bytes().as_ref(), program.buffers[b].dtype);
        let len = program.buffers[b].numel().max(1);
        constants += &format!("static __device__ const {integer} constant{b}[{len}] = {{{bits}}};\n");
    }
    let calls: Vec<String> = program
        .kernels
        .iter()
        .enumerate()
        .map(|(k, kernel)| {
            let buffers = kernel.outputs.iter().copied().chain(kernel.inputs());
            let args: Vec<String> = buffers.map(|b| device_pointer(program, &scratch, b)).collect();
            CUDA.call(&format!("device_code::kernel{k}"), &args)
        })
        .collect();
    let params: Vec<String> = program
        .inputs()
        .map(|(_, b)| (b, false))
        .chain(program.outputs().map(|(_, b)| (b, true)))
        .map(|(b, mutable)| {
            // A derivative may not read every input.
            format!("{} {}", CUDA.maybe_unused, CUDA.pointer_param(b.dtype, mutable, &argument_name(&b.kind)))
        })
        .collect();
    let ctx = context! {
        prelude => CUDA.prelude, constants, body => kernels(program, false, &CUDA),
        params => params.join(", "), scratch => scratch.declarations(program), calls,
    };
    device_environment()
        .get_template("cuda_device.j2")
        .and_then(|t| t.render(ctx))
        .expect("anvil's own templates render")
}

fn device_environment() -> &'static minijinja::Environment<'static> {
    static ENV: OnceLock<minijinja::Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        template_environment(&[
            ("cuda_device.j2", include_str!("templates/cuda_device.j2")),
            ("cuda_host.j2", include_str!("templates/cuda_host.j2")),
        ])
    })
}

/// An argument of a function's host call on a GPU: its type and bytes in all, and per item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostArgument {
    /// The element type.
    pub dtype: DType,
    /// Bytes of the whole argument the host passes.
    pub bytes: usize,
    /// Bytes of one item of it (0: one value shared by every item).
    pub stride: usize,
}

/// A module's host code for running `source` (the function `name`'s CUDA translation unit
/// for `items` items of `inputs` and `outputs`, its constants region `constants`) on a GPU:
/// `gpu::init_ws` compiles it with NVRTC with `options` and allocates, `gpu::call` copies
/// in, runs and copies out.
pub fn render_host_code(
    name: &str,
    source: &CudaSource,
    items: usize,
    (inputs, outputs): (&[HostArgument], &[HostArgument]),
    constants: &[u8],
    options: &[String],
) -> String {
    let arguments: Vec<minijinja::Value> = inputs
        .iter()
        .chain(outputs)
        .map(|a| context! { bytes => a.bytes, stride => a.stride, element => a.dtype.size() })
        .collect();
    let names = |prefix: &str, n: usize| (0..n).map(|k| format!("{prefix}{k}")).collect::<Vec<_>>();
    let params: Vec<String> = inputs
        .iter()
        .zip(names("in", inputs.len()))
        .map(|(a, n)| format!("const {}* {n}", CUDA.type_name(a.dtype)))
        .chain(
            outputs.iter().zip(names("out", outputs.len())).map(|(a, n)| format!("{}* {n}", CUDA.type_name(a.dtype))),
        )
        .collect();
    let or_null = |list: Vec<String>| if list.is_empty() { "nullptr".to_string() } else { list.join(", ") };
    let entries: Vec<minijinja::Value> = source
        .entries
        .iter()
        .map(|e| context! { name => e.name, work => e.threads.unwrap_or(0), exact => e.exact, lanes => e.lanes })
        .collect();
    let constant_data: Vec<String> = constants.iter().map(u8::to_string).collect();
    let ctx = context! {
        name, source => source.text, entries, items, arguments,
        scratch_stride => source.scratch_stride, scratch_bytes => source.scratch_bytes,
        constant_bytes => source.constant_bytes,
        constant_symbol => source.constant_memory.then_some(CONSTANT_SYMBOL),
        constant_data => if constant_data.is_empty() { "0".to_string() } else { constant_data.join(", ") },
        params => params.join(", "), inputs => or_null(names("in", inputs.len())),
        outputs => or_null(names("out", outputs.len())), input_count => inputs.len(),
        output_count => outputs.len(), options,
    };
    device_environment().get_template("cuda_host.j2").and_then(|t| t.render(ctx)).expect("anvil's own templates render")
}

/// A constant's bytes as integers of its element's width (exact, whatever the value: NaN,
/// infinities), and that integer type.
fn constant_bits(bytes: &[u8], dtype: DType) -> (String, &'static str) {
    let width = dtype.size();
    let (integer, suffix) = match width {
        8 => ("unsigned long long", "ULL"),
        4 => ("unsigned int", "U"),
        _ => ("unsigned char", ""),
    };
    let words: Vec<String> = bytes
        .chunks(width)
        .map(|chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            format!("{:#x}{suffix}", u64::from_le_bytes(word))
        })
        .collect();
    (if words.is_empty() { "0".to_string() } else { words.join(", ") }, integer)
}

/// The pointer `call_device` passes its kernels for buffer `b`.
fn device_pointer(program: &Program, scratch: &Scratch, b: usize) -> String {
    let buffer = &program.buffers[b];
    let cpp = CUDA.type_name(buffer.dtype);
    match &buffer.kind {
        BufferKind::Input(_) | BufferKind::Output(_) => argument_name(&buffer.kind),
        BufferKind::Constant(_) => format!("reinterpret_cast<const {cpp}*>(constant{b})"),
        BufferKind::Intermediate => match scratch {
            Scratch::Shared { offsets, .. } => {
                let offset = offsets[b].expect("intermediates have scratch offsets");
                format!("reinterpret_cast<{cpp}*>(ws + {offset})")
            }
            _ => format!("s{b}"),
        },
    }
}

/// The translation unit of `body` (the kernels' device functions) with `entries`: the batch
/// form's one, making every call of `calls` per item, or one per call.
fn assemble(
    name: &str,
    program: &Program,
    scratch: Scratch,
    body: String,
    entries: Vec<CudaEntry>,
    calls: Vec<String>,
) -> CudaSource {
    static ENV: OnceLock<minijinja::Environment<'static>> = OnceLock::new();
    let env = ENV.get_or_init(|| template_environment(&[("cuda.j2", include_str!("templates/cuda.j2"))]));
    let scratch_stride = scratch.global_stride();
    let (constant_bytes, constant_memory) = constant_placement(program);
    let batch = entries.len() == 1 && entries[0].threads.is_none();
    let lanes = entries[0].lanes;
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let ctx = context! {
        name, prelude => CUDA.prelude, body, fields => fields(program), batch, lanes, entries => names,
        scratch => scratch.declarations(program), calls,
        constant_array => constant_memory.then(|| format!("{CONSTANT_SYMBOL}[{constant_bytes}]")),
    };
    let text = env.get_template("cuda.j2").and_then(|t| t.render(ctx)).expect("anvil's own templates render");
    CudaSource { text, scratch_stride, constant_bytes, constant_memory, scratch_bytes: 0, entries }
}

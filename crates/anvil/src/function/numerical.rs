//! `NumericalFunction`: a traced function, callable through the JIT and emittable as C++.

use super::arg::Arg;
use super::names::check_identifier;
use super::outputs::IntoOutputs;
use crate::array::{Element, HostArray};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::graph::{self, NodeRef, TraceId};
use crate::jit::cuda::CudaFunction;
use crate::jit::{self, CompilerOptions, JitFunction, WorkspaceConstant};
use crate::lower::{self, LowerOptions, Program};
use crate::pattern::SparsityPattern;
use crate::render::{self, ItemSource};
use crate::tensor::Tensor;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};
use std::ffi::c_void;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// A traced numerical function: a graph from typed inputs to outputs, which runs as
/// JIT-compiled native code ([`call`](Self::call)) or is written into a C++ module
/// ([`crate::generate_module`]).
///
/// Every output gets its own C-contiguous (row-major) buffer: an output that is an input,
/// a view of one (`x.slice(..)`), a captured constant or a repeat of another output is
/// copied or computed into it (the original's two tracing fixups hold by construction).
///
/// ```
/// use anvil::{Arg, NumericalFunction, ndarray::array};
/// # fn main() -> anvil::Result<()> {
/// let f = NumericalFunction::new("split", |[x, y]| (&x + &y, &x * &y), [Arg::new(3), Arg::new(3)])?;
/// let (x, y) = (array![1.0, 2.0, 3.0].into_dyn(), array![4.0, 5.0, 6.0].into_dyn());
/// let out = f.eval(&[x.view(), y.view()])?; // the reference interpreter
/// assert_eq!(out[0], array![5.0, 7.0, 9.0].into_dyn());
/// assert_eq!(out[1], array![4.0, 10.0, 18.0].into_dyn());
/// # Ok(()) }
/// ```
pub struct NumericalFunction {
    name: String,
    inputs: Vec<Arg>,
    outputs: Vec<Arg>,
    output_nodes: Vec<NodeRef>,
    trace: TraceId,
    sparsity: Option<SparsityPattern>,
    backend: Backend,
    lowering: LowerOptions,
    batch_entry: bool,
    /// For a [`vmap`](crate::vmap)ped function, the function of one item: what a GPU runs
    /// per thread.
    mapped: Option<Arc<Mapped>>,
    program: OnceLock<Program>,
    jit: Mutex<Option<Arc<JitFunction>>>,
    pub(super) cuda: Mutex<Option<Arc<CudaFunction>>>,
}

/// A vmapped function's relation to the function of one item.
pub(crate) struct Mapped {
    /// The function of one item.
    pub(crate) item: NumericalFunction,
    /// Where each input has the batch axis (`None`: shared by all items).
    pub(crate) in_axes: Vec<Option<usize>>,
    /// Where each output has it.
    pub(crate) out_axis: usize,
    /// The number of items.
    pub(crate) batch: usize,
}

impl NumericalFunction {
    /// Traces `f` on symbolic inputs described by `inputs`.
    ///
    /// Fails if `name` is not a valid C++ identifier or if any op in `f` failed (shapes
    /// that do not broadcast, ...): the error names the op, the shapes and your source line.
    /// A tensor from another trace (kept from an earlier function's closure, say) is an
    /// error too: it cannot be told from this function's inputs otherwise.
    pub fn new<const N: usize, O: IntoOutputs>(
        name: &str,
        f: impl FnOnce([Tensor; N]) -> O,
        inputs: [Arg; N],
    ) -> Result<Self> {
        let trace = TraceId::fresh();
        let symbols = std::array::from_fn(|i| Tensor::traced_input(trace, i, inputs[i].shape.clone(), inputs[i].dtype));
        let outputs = f(symbols).into_outputs()?;
        Self::build(name, inputs.to_vec(), &outputs, Some(trace))
    }

    /// [`new`](Self::new) for a number of inputs known only at run time: `f` receives one
    /// symbolic tensor per `Arg`.
    pub fn trace<O: IntoOutputs>(name: &str, inputs: Vec<Arg>, f: impl FnOnce(Vec<Tensor>) -> O) -> Result<Self> {
        let trace = TraceId::fresh();
        let symbols = inputs.iter().enumerate().map(|(i, a)| Tensor::traced_input(trace, i, a.shape.clone(), a.dtype));
        let outputs = f(symbols.collect()).into_outputs()?;
        Self::build(name, inputs, &outputs, Some(trace))
    }

    /// A function from already-traced outputs over input symbols described by `inputs`
    /// (what graph transforms build): `Tensor::input(i, ..)`, or the inputs of one traced
    /// function. Inputs of two different traces are an error.
    pub fn from_tensors(name: &str, inputs: Vec<Arg>, outputs: &[Tensor]) -> Result<Self> {
        Self::build(name, inputs, outputs, None)
    }

    /// A function from outputs traced on inputs of `trace` (made with
    /// [`Tensor::traced_input`] and a fresh [`TraceId`]): every input in the graph must
    /// belong to `trace`. This is what [`new`](Self::new) does after calling the closure.
    pub fn from_trace(name: &str, inputs: Vec<Arg>, outputs: &[Tensor], trace: TraceId) -> Result<Self> {
        Self::build(name, inputs, outputs, Some(trace))
    }

    /// Checks the graph's inputs against `inputs` (and all of one trace: `trace`, if given).
    fn build(name: &str, inputs: Vec<Arg>, outputs: &[Tensor], trace: Option<TraceId>) -> Result<Self> {
        check_identifier(name, "function")?;
        let output_nodes = crate::tensor::nodes_of(outputs)?;
        if output_nodes.is_empty() {
            return Err(Error::InvalidName {
                name: name.into(),
                reason: "a function must return at least one tensor".into(),
            });
        }
        let mut seen_trace = trace;
        for node in graph::toposort(&output_nodes) {
            if let graph::Op::Input(input) = node.op {
                match seen_trace {
                    Some(t) if t != input.trace => return Err(Error::LeakedTensor { function: name.into() }),
                    _ => seen_trace = Some(input.trace),
                }
                let declared = inputs.get(input.index);
                if declared.is_none_or(|a| a.shape != node.shape || a.dtype != node.dtype) {
                    return Err(Error::InputMismatch {
                        function: name.into(),
                        index: input.index,
                        expected: declared.map_or("no such input".into(), |a| a.to_string()),
                        got: format!("a traced input {} array of shape {:?}", node.dtype, node.shape),
                    });
                }
            }
        }
        let outputs = output_nodes.iter().map(|n| Arg::with_dtype(n.shape.clone(), n.dtype)).collect();
        Ok(NumericalFunction {
            name: name.into(),
            inputs,
            outputs,
            output_nodes,
            trace: seen_trace.unwrap_or_else(TraceId::fresh),
            sparsity: None,
            backend: Backend::default(),
            lowering: LowerOptions::default(),
            batch_entry: false,
            mapped: None,
            program: OnceLock::new(),
            jit: Mutex::new(None),
            cuda: Mutex::new(None),
        })
    }

    /// The trace this function's inputs belong to.
    pub fn trace_id(&self) -> TraceId {
        self.trace
    }

    /// The symbolic tensor of input `i` (as the traced graph refers to it).
    ///
    /// # Panics
    /// If `i` is not an input index.
    pub fn input_tensor(&self, i: usize) -> Tensor {
        let arg = &self.inputs[i];
        Tensor::traced_input(self.trace, i, arg.shape.clone(), arg.dtype)
    }

    /// The same function with other JIT compiler options (before the first call): the C++
    /// compiler of its CPU code, or of the CUDA emulation (see [`CudaOptions`](crate::CudaOptions)).
    pub fn with_compiler(self, options: CompilerOptions) -> Self {
        let backend = self.backend.clone().with_compiler(options);
        self.with_backend(backend)
    }

    /// The same function on another backend (before the first call): where it runs, and
    /// what compiles its code. Functions derived from it ([`ad`](crate::ad), [`vmap`](crate::vmap))
    /// run there too.
    ///
    /// ```
    /// use anvil::{Arg, Backend, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("f", |[x]| x.sin(), [Arg::new(3)])?.with_backend(Backend::parse("CUDA")?);
    /// assert_eq!(f.backend().name(), "CUDA");
    /// assert!(f.cuda_source().text.contains("__global__"));
    /// # Ok(()) }
    /// ```
    pub fn with_backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self.jit = Mutex::new(None);
        self.cuda = Mutex::new(None);
        self
    }

    /// Where the function runs.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The same function, known to be `mapped`'s function of a batch (see [`Mapped`]).
    pub(crate) fn with_mapped(mut self, mapped: Mapped) -> Self {
        self.mapped = Some(Arc::new(mapped));
        self
    }

    /// The function of one item and how it is mapped, for a vmapped function.
    pub(crate) fn mapped(&self) -> Option<&Mapped> {
        self.mapped.as_deref()
    }

    /// The same function lowered with other options (before the first call).
    pub fn with_lowering(mut self, options: LowerOptions) -> Self {
        self.lowering = options;
        self.program = OnceLock::new();
        self.jit = Mutex::new(None);
        self
    }

    /// The same function with the C++ entry point `call_batch` next to `call` in its
    /// generated code: one call evaluates it on many items whose arguments lie at strided
    /// addresses (the stages of a multistage problem, a batch of states). A function that
    /// lowers to straight-line code runs as one loop over the items, which the C++ compiler
    /// vectorises across them (its `call` is that loop on one item: one copy of the code).
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("step", |[x]| x.sin() * 2.0, [Arg::new(3)])?.with_batch_entry();
    /// let code = f.module_source();
    /// assert!(code.header.contains("void call_batch(long long count, IN0_t in0, long long in0_stride"));
    /// # Ok(()) }
    /// ```
    pub fn with_batch_entry(mut self) -> Self {
        self.batch_entry = true;
        self
    }

    /// The same function under another name (a derived function's default name, such as
    /// `f_jac`, can then live next to another derivative of `f` in one module).
    ///
    /// ```
    /// use anvil::{ad, Arg, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("f", |[x, p]| &x * &p, [Arg::new(2), Arg::new(2)])?;
    /// let dx = ad::jacobian_wrt(&f, 0)?.renamed("f_dx")?;
    /// let dp = ad::jacobian_wrt(&f, 1)?.renamed("f_dp")?;
    /// assert_eq!((dx.name(), dp.name()), ("f_dx", "f_dp"));
    /// # Ok(()) }
    /// ```
    pub fn renamed(&self, name: &str) -> Result<NumericalFunction> {
        check_identifier(name, "function")?;
        let program = OnceLock::new();
        if let Some(p) = self.program.get() {
            let _ = program.set(p.clone());
        }
        Ok(NumericalFunction {
            name: name.into(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            output_nodes: self.output_nodes.clone(),
            trace: self.trace,
            sparsity: self.sparsity.clone(),
            backend: self.backend.clone(),
            lowering: self.lowering.clone(),
            batch_entry: self.batch_entry,
            mapped: self.mapped.clone(),
            program,
            jit: Mutex::new(None),
            cuda: Mutex::new(None),
        })
    }

    /// The function of the same inputs (and name) computing only its output `k`: what a
    /// derivative of one output of a function with several differentiates.
    ///
    /// ```
    /// use anvil::{ad, Arg, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("f", |[x]| (x.sin(), x.exp()), [Arg::new(3)])?;
    /// assert!(ad::jacobian(&f).is_err()); // which output? say it:
    /// let jac_exp = ad::jacobian(&f.output(1)?)?;
    /// assert_eq!(jac_exp.outputs()[0].shape, vec![3, 3]);
    /// # Ok(()) }
    /// ```
    pub fn output(&self, k: usize) -> Result<NumericalFunction> {
        let Some(node) = self.output_nodes.get(k) else {
            return Err(Error::Transform {
                transform: "output",
                function: self.name.clone(),
                message: format!("there is no output {k} ({} outputs)", self.outputs.len()),
            });
        };
        let tensor = Tensor::from_node(node.clone());
        Ok(NumericalFunction::from_trace(&self.name, self.inputs.clone(), &[tensor], self.trace)?
            .with_backend(self.backend.clone())
            .with_lowering(self.lowering.clone()))
    }

    /// The same function, declared to return the non-zeros of a sparse matrix (CSC order).
    pub fn with_sparsity(mut self, pattern: SparsityPattern) -> Self {
        self.sparsity = Some(pattern);
        self
    }

    /// The function's name (its C++ namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Input specifications.
    pub fn inputs(&self) -> &[Arg] {
        &self.inputs
    }

    /// Output specifications, from tracing.
    pub fn outputs(&self) -> &[Arg] {
        &self.outputs
    }

    /// The output tensors of the traced graph.
    pub fn output_tensors(&self) -> Vec<Tensor> {
        self.output_nodes.iter().cloned().map(Tensor::from_node).collect()
    }

    /// The function applied to tensors inside another traced function: its graph with the
    /// inputs replaced by `args` (each of the declared shape and dtype), so that functions
    /// compose (the result is inlined, then fused like any other graph).
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction};
    /// # fn main() -> anvil::Result<()> {
    /// let step = NumericalFunction::new("step", |[x]| &x + x.sin() * 0.1, [Arg::new(3)])?;
    /// let twice = NumericalFunction::new("twice", |[x]| {
    ///     let once = step.apply(&[x])?.remove(0);
    ///     Ok(step.apply(&[once])?.remove(0))
    /// }, [Arg::new(3)])?;
    /// assert_eq!(twice.outputs()[0].shape, vec![3]);
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn apply(&self, args: &[Tensor]) -> Result<Vec<Tensor>> {
        if args.len() != self.inputs.len() {
            return Err(Error::ArgumentCount {
                function: self.name.clone(),
                expected: self.inputs.len(),
                got: args.len(),
            });
        }
        let mut replacements = std::collections::HashMap::new();
        for (i, a) in args.iter().enumerate() {
            replacements.insert(self.input_tensor(i).node()?.id(), a.node()?.clone());
        }
        match graph::substitute(&self.output_nodes, &replacements) {
            Ok(nodes) => Ok(nodes.into_iter().map(Tensor::from_node).collect()),
            Err((input, given)) => Err(Error::Op {
                op: "apply",
                message: format!(
                    "an argument of shape {} ({}) replaces an input of shape {} ({})",
                    crate::shape::fmt_shape(&given.shape),
                    given.dtype,
                    crate::shape::fmt_shape(&input.shape),
                    input.dtype
                ),
                location: crate::error::SourceLocation::caller(),
            }),
        }
    }

    /// The sparsity pattern, for functions that return sparse non-zeros.
    pub fn sparsity(&self) -> Option<&SparsityPattern> {
        self.sparsity.as_ref()
    }

    /// The lowered program (kernels, buffers, workspace), computed once.
    pub fn program(&self) -> &Program {
        self.program.get_or_init(|| {
            let inputs: Vec<_> = self.inputs.iter().map(|a| (a.dtype, a.shape.clone())).collect();
            lower::lower_with(&self.output_nodes, &inputs, &self.lowering)
        })
    }

    /// The C++ translation unit the JIT compiles.
    pub fn jit_source(&self) -> String {
        render::render_jit(&self.name, self.program())
    }

    /// This function's part of a C++ module.
    pub fn module_source(&self) -> ItemSource {
        let device_code = matches!(self.backend, Backend::Cuda(_))
            .then(|| self.cuda_device_source() + &self.cuda_host_source().unwrap_or_default());
        render::render_function(&self.name, self.program(), self.sparsity.as_ref(), self.batch_entry, device_code)
    }

    /// The loaded native code, if [`compile`](Self::compile) has run.
    pub fn compiled(&self) -> Option<Arc<JitFunction>> {
        self.jit.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Compiles (or finds in the cache) and loads the native code; `call` does this on
    /// first use.
    pub fn compile(&self) -> Result<Arc<JitFunction>> {
        let mut slot = self.jit.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(jit) = slot.as_ref() {
            return Ok(jit.clone());
        }
        let what = || format!("the workspace of `{}` (its intermediates and captured constants)", self.name);
        crate::array::check_alloc(what, self.program().workspace_size, 1)?;
        let path = jit::compile_cached(&self.name, &self.jit_source(), self.backend.compiler())?;
        let constants =
            self.program().constants().map(|(_, data, offset)| WorkspaceConstant { offset, data: data.clone() });
        let jit = Arc::new(JitFunction::load(&path, &self.name, self.program().workspace_size, constants.collect())?);
        *slot = Some(jit.clone());
        Ok(jit)
    }

    /// Runs the native code on `f64` inputs; outputs are returned as `f64` arrays
    /// (other output dtypes are converted). Safe to call from several threads at once.
    ///
    /// ```no_run
    /// # use anvil::{Arg, NumericalFunction, ndarray::array};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("add", |[x, y]| x + y, [Arg::new(3), Arg::new(3)])?;
    /// let out = f.call(&[array![1.0, 2.0, 3.0].into_dyn().view(), array![4.0, 5.0, 6.0].into_dyn().view()])?;
    /// assert_eq!(out[0], array![5.0, 7.0, 9.0].into_dyn());
    /// # Ok(()) }
    /// ```
    pub fn call(&self, inputs: &[ArrayViewD<f64>]) -> Result<Vec<ArrayD<f64>>> {
        self.check_inputs(inputs.len(), |i| (f64::DTYPE, inputs[i].shape()))?;
        let contiguous: Vec<_> = inputs.iter().map(|a| a.as_standard_layout()).collect();
        let ptrs: Vec<*mut c_void> = contiguous.iter().map(|a| a.as_ptr() as *mut c_void).collect();
        let outputs = self.run(&ptrs)?;
        Ok(outputs
            .into_iter()
            .map(|o| match o {
                HostArray::F64(a) => a,
                other => other.to_f64(),
            })
            .collect())
    }

    /// Runs the native code writing into caller-provided `f64` outputs (standard layout,
    /// exact shapes): no allocation, for calls in a control loop.
    ///
    /// ```
    /// # use anvil::{Arg, NumericalFunction, ndarray::{array, ArrayD}};
    /// # fn main() -> anvil::Result<()> {
    /// let f = NumericalFunction::new("twice", |[x]| x * 2.0, [Arg::new(2)])?;
    /// let mut out = ArrayD::zeros(vec![2]);
    /// f.call_into(&[array![1.0, 2.0].into_dyn().view()], &mut [out.view_mut()])?;
    /// assert_eq!(out, array![2.0, 4.0].into_dyn());
    /// # Ok(()) }
    /// ```
    pub fn call_into(&self, inputs: &[ArrayViewD<f64>], outputs: &mut [ArrayViewMutD<f64>]) -> Result<()> {
        self.check_inputs(inputs.len(), |i| (f64::DTYPE, inputs[i].shape()))?;
        if outputs.len() != self.outputs.len() {
            return Err(Error::ArgumentCount {
                function: format!("{} (outputs)", self.name),
                expected: self.outputs.len(),
                got: outputs.len(),
            });
        }
        for (k, (out, spec)) in outputs.iter().zip(&self.outputs).enumerate() {
            if spec.dtype != crate::dtype::DType::F64
                || out.shape() != spec.shape.as_slice()
                || !out.is_standard_layout()
            {
                return Err(Error::InputMismatch {
                    function: format!("{} (outputs)", self.name),
                    index: k,
                    expected: format!("a standard-layout {spec}"),
                    got: format!(
                        "f64 array of shape {:?}{}",
                        out.shape(),
                        if out.is_standard_layout() { "" } else { " (not standard layout)" }
                    ),
                });
            }
        }
        let contiguous: Vec<_> = inputs.iter().map(|a| a.as_standard_layout()).collect();
        let ptrs: Vec<*mut c_void> = contiguous.iter().map(|a| a.as_ptr() as *mut c_void).collect();
        let out_ptrs: Vec<*mut c_void> = outputs.iter_mut().map(|o| o.as_mut_ptr() as *mut c_void).collect();
        // SAFETY: inputs and outputs were checked against the traced dtypes and shapes, are
        // in standard layout, and the outputs are exclusively borrowed.
        unsafe { self.call_pointers(&ptrs, &out_ptrs) }
    }

    /// Runs the native code on inputs of any dtype; each must match its `Arg` exactly.
    pub fn call_dyn(&self, inputs: &[HostArray]) -> Result<Vec<HostArray>> {
        self.check_inputs(inputs.len(), |i| (inputs[i].dtype(), inputs[i].shape()))?;
        let contiguous: Vec<HostArray> = inputs.iter().map(standard_layout).collect();
        let ptrs: Vec<*mut c_void> = contiguous.iter().map(data_ptr).collect();
        self.run(&ptrs)
    }

    fn run(&self, inputs: &[*mut c_void]) -> Result<Vec<HostArray>> {
        let mut outputs: Vec<HostArray> =
            self.outputs.iter().map(|o| HostArray::try_zeros(o.dtype, &o.shape)).collect::<Result<_>>()?;
        let out_ptrs: Vec<*mut c_void> = outputs.iter_mut().map(|o| data_ptr(o)).collect();
        // SAFETY: inputs were checked against the declared dtypes and shapes and are in
        // standard layout; outputs were just allocated with the traced dtypes and shapes.
        unsafe { self.call_pointers(inputs, &out_ptrs)? };
        Ok(outputs)
    }

    /// Runs the native code of the function's backend (compiled on first use) on host
    /// memory: a pointer per input and per output.
    ///
    /// # Safety
    /// Each pointer must address a C-contiguous array of its argument's declared dtype and
    /// shape, alive for the call; the outputs must not alias anything else.
    pub unsafe fn call_pointers(&self, inputs: &[*mut c_void], outputs: &[*mut c_void]) -> Result<()> {
        match self.backend {
            // SAFETY: as the caller vouches.
            Backend::Cpu(_) => unsafe { self.compile()?.call(inputs, outputs) },
            // SAFETY: as the caller vouches.
            Backend::Cuda(_) => unsafe { self.run_cuda(inputs, outputs) },
        }
    }

    /// Evaluates with the reference interpreter (no compiler needed).
    pub fn eval(&self, inputs: &[ArrayViewD<f64>]) -> Result<Vec<ArrayD<f64>>> {
        self.check_inputs(inputs.len(), |i| (f64::DTYPE, inputs[i].shape()))?;
        let hosts: Vec<HostArray> = inputs.iter().map(|a| HostArray::F64(a.to_owned())).collect();
        Ok(graph::eval_nodes(&self.output_nodes, &hosts)?.iter().map(HostArray::to_f64).collect())
    }

    /// [`eval`](Self::eval) for inputs of any dtype.
    pub fn eval_dyn(&self, inputs: &[HostArray]) -> Result<Vec<HostArray>> {
        self.check_inputs(inputs.len(), |i| (inputs[i].dtype(), inputs[i].shape()))?;
        graph::eval_nodes(&self.output_nodes, inputs)
    }

    fn check_inputs<'a>(&self, count: usize, spec: impl Fn(usize) -> (crate::dtype::DType, &'a [usize])) -> Result<()> {
        if count != self.inputs.len() {
            return Err(Error::ArgumentCount { function: self.name.clone(), expected: self.inputs.len(), got: count });
        }
        for (i, arg) in self.inputs.iter().enumerate() {
            let (dtype, shape) = spec(i);
            if dtype != arg.dtype || shape != arg.shape.as_slice() {
                let hint = if dtype != arg.dtype && dtype == crate::dtype::DType::F64 {
                    " (use `call_dyn` for other dtypes)"
                } else {
                    ""
                };
                return Err(Error::InputMismatch {
                    function: self.name.clone(),
                    index: i,
                    expected: arg.to_string(),
                    got: format!("{dtype} array of shape {shape:?}{hint}"),
                });
            }
        }
        Ok(())
    }
}

fn standard_layout(a: &HostArray) -> HostArray {
    crate::array::with_host_array!(a, x => if x.is_standard_layout() { a.clone() } else {
        HostArray::from(x.as_standard_layout().into_owned())
    })
}

fn data_ptr(a: &HostArray) -> *mut c_void {
    crate::array::with_host_array!(a, x => x.as_ptr() as *mut c_void)
}

impl fmt::Debug for NumericalFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NumericalFunction")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

/// Calling from several threads at once is part of the contract.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<NumericalFunction>()
};

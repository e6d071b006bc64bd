//! Assembles kernels into C++ sources: the AOT module (`.hpp` + `.cpp`) and the JIT
//! translation unit, from the templates in `templates/`. Each kernel is scheduled into its
//! loop nest ([`crate::lower::nest`]) and printed ([`super::kernel`]).

use super::dialect::{Dialect, CPP};
use super::kernel::{render_batched_kernel, render_kernel};
use crate::array::HostArray;
use crate::dtype::DType;
use crate::graph::Literal;
use crate::lower::nest::{batchable, schedule, Form};
use crate::lower::{BufferKind, Program};
use crate::pattern::SparsityPattern;
use minijinja::{context, Environment};
use serde::Serialize;
use std::sync::OnceLock;

/// A template environment with the settings every C++ template of anvil is written for
/// (blocks trimmed, trailing newlines kept), holding `templates` (name, text).
pub fn template_environment(templates: &[(&'static str, &'static str)]) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    for (name, text) in templates {
        env.add_template(name, text).expect("anvil's own templates parse");
    }
    env
}

fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        template_environment(&[
            ("module_header.j2", include_str!("templates/module_header.j2")),
            ("module_source.j2", include_str!("templates/module_source.j2")),
            ("function_header.j2", include_str!("templates/function_header.j2")),
            ("function_source.j2", include_str!("templates/function_source.j2")),
            ("jit.j2", include_str!("templates/jit.j2")),
        ])
    })
}

fn render(template: &str, ctx: minijinja::Value) -> String {
    templates().get_template(template).and_then(|t| t.render(ctx)).expect("anvil's own templates render")
}

/// One item's part of a C++ module (a function's, a solver's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemSource {
    /// Declarations for the `.hpp`.
    pub header: String,
    /// Definitions for the `.cpp`.
    pub source: String,
}

/// A whole module's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleText {
    /// The module's name (its files are `<name>.hpp` and `<name>.cpp`).
    pub name: String,
    /// The `.hpp`.
    pub header: String,
    /// The `.cpp`.
    pub source: String,
}

impl ModuleText {
    /// The module as one translation unit (the header's text where the `.cpp` includes
    /// it), followed by `extra`: what the JIT compiles.
    pub fn single_unit(&self, extra: &str) -> String {
        let include = format!("#include \"{}.hpp\"\n", self.name);
        let header = self.header.replacen("#pragma once\n", "", 1);
        let body = self.source.replacen(&include, &header, 1);
        format!("{body}\n{extra}")
    }
}

#[derive(Serialize)]
struct ArgType {
    type_name: String,
    cpp: &'static str,
    shape: Vec<usize>,
}

#[derive(Serialize)]
struct Copy {
    offset: usize,
    name: String,
}

/// Where a buffer's memory comes from, as C++ expressions for each code flavour.
enum Flavour {
    Module,
    Jit,
}

fn pointer(program: &Program, b: usize, flavour: &Flavour) -> String {
    let buffer = &program.buffers[b];
    let cpp = CPP.type_name(buffer.dtype);
    match (&buffer.kind, flavour) {
        (BufferKind::Input(i), Flavour::Module) => format!("in{i}.data"),
        (BufferKind::Output(k), Flavour::Module) => format!("out{k}.data"),
        (BufferKind::Input(i), Flavour::Jit) => format!("static_cast<{cpp}*>(in[{i}])"),
        (BufferKind::Output(k), Flavour::Jit) => format!("static_cast<{cpp}*>(out[{k}])"),
        (_, flavour) => {
            let base = match flavour {
                Flavour::Module => "ws.data",
                Flavour::Jit => "ws",
            };
            let offset = program.offsets[b].expect("workspace buffers have offsets");
            format!("reinterpret_cast<{cpp}*>({base} + {offset})")
        }
    }
}

/// The captured constants as `static constexpr` arrays (the module flavour's; the JIT's are
/// handed over by the host), then the kernel functions (with `batched`, their batched forms).
fn body(program: &Program, batched: bool) -> String {
    constant_arrays(program) + &kernels(program, batched, &CPP)
}

fn constant_arrays(program: &Program) -> String {
    let mut out = String::new();
    for (b, data, _) in program.constants() {
        let buffer = &program.buffers[b];
        if buffer.numel() > 0 {
            out += &format!(
                "static constexpr {} constant{b}[{}] = {{{}}};\n",
                CPP.type_name(buffer.dtype),
                buffer.numel(),
                values(data)
            );
        }
    }
    out
}

/// The kernel functions (with `batched`, their batched forms instead).
pub(crate) fn kernels(program: &Program, batched: bool, dialect: &Dialect) -> String {
    let dtypes: Vec<DType> = program.buffers.iter().map(|b| b.dtype).collect();
    let mut out = String::new();
    let fast = |op, dtype| dialect.has_fast_unary(op, dtype);
    for (k, kernel) in program.kernels.iter().enumerate() {
        out += &if batched {
            render_batched_kernel(&schedule(kernel, Form::Items, fast), &format!("kernel{k}_batch"), &dtypes, dialect)
        } else {
            render_kernel(&schedule(kernel, Form::Loops, fast), &format!("kernel{k}"), &dtypes, dialect)
        };
    }
    out.trim_end().to_string()
}

fn values(data: &HostArray) -> String {
    let dtype = data.dtype();
    let lit = |v: f64| CPP.literal(crate::graph::scalar::literal_from_f64(dtype, v), dtype);
    let items: Vec<String> = match data {
        HostArray::I64(a) => a.iter().map(|&v| CPP.literal(Literal::Int(v), dtype)).collect(),
        _ => data.to_f64_vec().into_iter().map(lit).collect(),
    };
    items.join(", ")
}

fn calls(program: &Program, flavour: &Flavour) -> Vec<String> {
    program
        .kernels
        .iter()
        .enumerate()
        .map(|(k, kernel)| {
            let mut args: Vec<String> = kernel.outputs.iter().map(|&b| pointer(program, b, flavour)).collect();
            args.extend(kernel.inputs().into_iter().map(|b| pointer(program, b, flavour)));
            format!("kernel{k}({});", args.join(", "))
        })
        .collect()
}

/// True if every kernel of `program` is straight-line code passing nothing to the next
/// through the workspace: the program then runs on a batch of items as one loop per kernel.
fn runs_batched(program: &Program) -> bool {
    program.kernels.iter().all(batchable) && !program.buffers.iter().any(|b| matches!(b.kind, BufferKind::Intermediate))
}

/// The statements of `call_batch` (module flavour): the batched kernels when the program
/// `runs_batched`, or else `call` once per item (`buffers`: the function's buffer parameters).
fn batch_calls(program: &Program, buffers: &[BufferParam], runs_batched: bool) -> Vec<String> {
    if runs_batched {
        let item = |b: usize| match program.buffers[b].kind {
            BufferKind::Input(i) => format!("in{i}.data, in{i}_stride"),
            BufferKind::Output(k) => format!("out{k}.data, out{k}_stride"),
            _ => format!("{}, 0", pointer(program, b, &Flavour::Module)),
        };
        return program
            .kernels
            .iter()
            .enumerate()
            .map(|(k, kernel)| {
                let mut args = vec!["count".to_string()];
                args.extend(kernel.outputs.iter().chain(&kernel.inputs()).map(|&b| item(b)));
                format!("kernel{k}_batch({});", args.join(", "))
            })
            .collect();
    }
    let args: Vec<String> = buffers
        .iter()
        .map(|p| format!("{}{{{}.data + item * {}_stride}}", p.type_name, p.name, p.name))
        .chain(["ws".to_string()])
        .collect();
    vec![format!("for (long long item = 0; item < count; ++item) call({});", args.join(", "))]
}

/// A buffer parameter of a function's entry points: `IN0_t in0`, `OUT1_t out1`.
struct BufferParam {
    type_name: String,
    name: String,
}

/// An entry point as the templates take it: its signature from `params` (declaration, name),
/// the parameters its `statements` do not use, and the statements.
fn entry_point(params: &[(String, String)], statements: Vec<String>) -> minijinja::Value {
    let signature = params.iter().map(|(decl, _)| decl.as_str()).collect::<Vec<_>>().join(", ");
    let names: Vec<String> = params.iter().map(|(_, name)| name.clone()).collect();
    context! { signature, unused => unused_params(&names, &statements), calls => statements }
}

/// The parameters of `params` whose names no statement of `statements` mentions.
fn unused_params(params: &[String], statements: &[String]) -> Vec<String> {
    params.iter().filter(|arg| !statements.iter().any(|c| mentions(c, arg))).cloned().collect()
}

/// Whether `code` uses identifier `name` (not merely a longer one starting with it).
fn mentions(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

fn copies(program: &Program) -> Vec<Copy> {
    program
        .constants()
        .filter(|(b, _, _)| program.buffers[*b].numel() > 0)
        .map(|(b, _, offset)| Copy { offset, name: format!("constant{b}") })
        .collect()
}

/// The `.hpp` and `.cpp` parts of function `name`; with `batched`, the function also gets
/// the entry point `call_batch` (evaluation on many items at strided addresses).
///
/// `device_code`, if given, is added to the function's namespace in the header: its CUDA
/// `__device__` form (see [`super::cuda::render_device_function`]).
pub fn render_function(
    name: &str,
    program: &Program,
    sparse: Option<&SparsityPattern>,
    batched: bool,
    device_code: Option<String>,
) -> ItemSource {
    let mut args = Vec::new();
    let mut buffers = Vec::new();
    for (_, b) in program.inputs().chain(program.outputs()) {
        let (prefix, i) = match b.kind {
            BufferKind::Input(i) => ("in", i),
            BufferKind::Output(k) => ("out", k),
            _ => unreachable!(),
        };
        let type_name = format!("{}{i}_t", prefix.to_uppercase());
        args.push(ArgType { type_name: type_name.clone(), cpp: CPP.type_name(b.dtype), shape: b.shape.clone() });
        buffers.push(BufferParam { type_name, name: format!("{prefix}{i}") });
    }
    let ws = ("WS_t ws".to_string(), "ws".to_string());
    // A program that runs batched has only the batched kernels: `call` is one item of them.
    let one_loop = batched && runs_batched(program);
    let call_statements = if one_loop {
        let args: Vec<String> = buffers.iter().map(|p| format!("{}, 0", p.name)).collect();
        vec![format!("call_batch(1, {}, ws);", args.join(", "))]
    } else {
        calls(program, &Flavour::Module)
    };
    let call_params: Vec<(String, String)> =
        buffers.iter().map(|p| (format!("{} {}", p.type_name, p.name), p.name.clone())).chain([ws.clone()]).collect();
    let call = entry_point(&call_params, call_statements);
    let batch = batched.then(|| {
        let mut params = vec![("long long count".to_string(), "count".to_string())];
        for p in &buffers {
            params.push((format!("{} {}", p.type_name, p.name), p.name.clone()));
            params.push((format!("long long {}_stride", p.name), format!("{}_stride", p.name)));
        }
        params.push(ws);
        entry_point(&params, batch_calls(program, &buffers, one_loop))
    });
    let sparse_ctx = sparse.map(|s| {
        let join = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        let ((rows, cols), (outer_starts, inner_indices)) = (s.shape(), s.csc());
        context! {
            rows, cols, nnz => inner_indices.len(),
            inner_len => inner_indices.len().max(1), inner => join(&inner_indices),
            outer_len => outer_starts.len(), outer => join(&outer_starts),
        }
    });
    let header = render(
        "function_header.j2",
        context! { name, args, ws_size => program.workspace_size, sparse => sparse_ctx, call, batch, device_code },
    );
    let source = render(
        "function_source.j2",
        context! { name, body => body(program, one_loop), copies => copies(program), call, batch },
    );
    ItemSource { header, source }
}

/// A codegen integer constant as the header declares it.
#[derive(Serialize)]
pub struct ConstantDecl {
    /// C++ type (`int`, `int32_t`, `int64_t`).
    pub r#type: String,
    /// Identifier.
    pub name: String,
    /// Defining expression (a number, or arithmetic on earlier constants).
    pub expr: String,
}

/// The module's `.hpp` and `.cpp` text: `items` in order, `constants` declared in the
/// header, `header_includes` in the header and `source_includes` in the source.
pub fn render_module(
    module_name: &str,
    items: &[ItemSource],
    constants: &[ConstantDecl],
    header_includes: &[String],
    source_includes: &[String],
) -> ModuleText {
    let headers: Vec<&str> = items.iter().map(|f| f.header.as_str()).collect();
    let sources: Vec<&str> = items.iter().map(|f| f.source.as_str()).collect();
    let header = render(
        "module_header.j2",
        context! { module_name, constants, functions => headers, includes => header_includes },
    );
    let source = render(
        "module_source.j2",
        context! { module_name, prelude => CPP.prelude, functions => sources, includes => source_includes },
    );
    ModuleText { name: module_name.into(), header, source }
}

/// The JIT translation unit of function `name`: the same kernels behind `extern "C"`
/// entry points `jit_<name>_init_ws`, `jit_<name>_free_ws` and `jit_<name>_call`.
///
/// The captured constants are not in the text: `init_ws` only allocates, and the host
/// copies each constant to its workspace offset ([`Program::constants`]). So the source's
/// size does not grow with the constants' (a seed or index table of a million elements), and
/// functions that differ only in their captured data share one compiled library.
pub fn render_jit(name: &str, program: &Program) -> String {
    render(
        "jit.j2",
        context! {
            name, prelude => CPP.prelude, body => kernels(program, false, &CPP),
            calls => calls(program, &Flavour::Jit), ws_size => program.workspace_size,
        },
    )
}

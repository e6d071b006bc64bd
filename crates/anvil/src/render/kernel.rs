//! Loop-nest IR → a C++ function: the printer of a scheduled kernel ([`Nest`]).
//!
//! Every decision (loop order, splitting, hoisting, clamping, outlining, which math is
//! fast) is the [`Nest`]'s; this module only spells it through a [`Dialect`]. Each
//! [`Stmt::Let`] becomes one `const` temporary; math goes through compiler builtins so
//! that the JIT translation unit needs no headers; literals are written inline.
//!
//! A nest that computes with [`Math::Fast`] is printed twice: with the prelude's inline
//! `anvil_fast_sin`/`anvil_fast_cos`, raising a flag when an argument is beyond their
//! range, and with the exact functions under `<name>_exact`; the kernel's function runs
//! the second only when the first raised the flag. Rerunning is sound: a kernel's outputs
//! never alias its inputs (its pointers are `restrict`).

use super::dialect::{fill, Dialect};
use crate::dtype::DType;
use crate::graph::{reduce_identity, BinaryOp, Literal};
use crate::lower::index::IndexSpelling;
use crate::lower::nest::{Extent, Form, Hint, Math, Nest, Operand, Stmt, Value};
use crate::lower::BufferId;
use std::fmt::Write;

/// Renders a nest scheduled as [`Form::Loops`] (or [`Form::Grid`], a function a grid of
/// threads runs together) as a function named `name` taking `(outputs..., inputs...)`
/// pointers in the order of [`Nest::outputs`] and [`Nest::inputs`]; `dtypes` gives each
/// buffer's element type.
pub fn render_kernel(nest: &Nest, name: &str, dtypes: &[DType], dialect: &Dialect) -> String {
    let signature = pointers_signature(nest, dtypes, dialect);
    with_exact_rerun(nest, name, &signature, dialect, |printer| {
        match nest.form {
            Form::Grid => printer.line(1, dialect.statements.grid_preamble),
            Form::Warp => printer.line(1, dialect.statements.warp_preamble),
            Form::Loops | Form::Items => {}
        }
        printer.block(&nest.body, 1)
    })
}

/// The signature of a kernel taking `(outputs..., inputs...)` pointers.
fn pointers_signature(nest: &Nest, dtypes: &[DType], dialect: &Dialect) -> Signature {
    let mut params: Vec<String> =
        nest.outputs.iter().map(|&b| dialect.pointer_param(dtypes[b], true, &format!("b{b}"))).collect();
    // Index-set splitting may decide away every read of an input (the padded branches of a
    // `where`): an input may go unused.
    for &b in &nest.inputs {
        params.push(format!("{} {}", dialect.maybe_unused, dialect.pointer_param(dtypes[b], false, &format!("b{b}"))));
    }
    let mut args: Vec<String> = nest.outputs.iter().chain(&nest.inputs).map(|&b| format!("b{b}")).collect();
    if nest.partial_bytes > 0 {
        params.push(dialect.statements.partials_param.to_string());
        args.push("partials".into());
    }
    Signature { attribute: function_attribute(nest, dialect).to_string(), params, args }
}

/// Renders a nest scheduled as [`Form::Items`] as a loop over `count` items, named `name`
/// and taking `(count, output, stride, inputs and strides...)`: item `k` reads and writes
/// buffer `b` at `b + k * stride` (a stride of 0 shares one buffer among the items; the
/// outputs' must keep the items apart). The body is the kernel's own code, so each item's
/// results are the kernel's, except that math comes from vector functions where the loop
/// vectorises.
///
/// # Panics
/// If the nest is not of [`Form::Items`] (a bug in the caller).
pub fn render_batched_kernel(nest: &Nest, name: &str, dtypes: &[DType], dialect: &Dialect) -> String {
    assert_eq!(nest.form, Form::Items, "only straight-line kernels are batched");
    let index = dialect.type_name(DType::I64);
    let mut params = vec![dialect.parameter(index, "count")];
    let mut args = vec!["count".to_string()];
    let mut pointers = String::new();
    let buffers = nest.outputs.iter().map(|&b| (b, true)).chain(nest.inputs.iter().map(|&b| (b, false)));
    for (b, mutable) in buffers {
        let stride = dialect.parameter(index, &format!("stride{b}"));
        params.push(format!("{}, {stride}", dialect.pointer_param(dtypes[b], mutable, &format!("items{b}"))));
        args.push(format!("items{b}, stride{b}"));
        let pointee = dialect.pointee(dtypes[b], mutable);
        let pointer = dialect.pointer_binding(&pointee, &format!("b{b}"), &format!("items{b} + item * stride{b}"));
        let _ = writeln!(pointers, "    {} {pointer}", dialect.maybe_unused);
    }
    let attribute = format!("{}{}", function_attribute(nest, dialect), dialect.annotations.runtime_strides);
    let signature = Signature { attribute, params, args };
    with_exact_rerun(nest, name, &signature, dialect, |printer| {
        let [open, close] = dialect.statements.block;
        let items = dialect.loop_head("item", "0", "count");
        let _ = write!(printer.code, "  {}\n  {items} {open}\n{pointers}", dialect.annotations.items_loop);
        printer.block(&nest.body, 2);
        let _ = writeln!(printer.code, "  {close}");
    })
}

/// How a kernel's function is declared and called.
struct Signature {
    /// Its own attributes (without those of its [`Trig`] flavour).
    attribute: String,
    params: Vec<String>,
    args: Vec<String>,
}

/// How a printed function computes [`Math::Fast`] operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trig {
    /// With the exact functions: the kernel as it is called.
    Exact,
    /// With the fast functions: returns whether it met an argument beyond their range.
    Fast,
    /// With the exact functions, rarely: the rerun of a fast kernel.
    Rerun,
}

/// The function `name` of `nest`, its body printed by `body`: if the nest uses fast math,
/// a fast flavour, an exact one, and the function calling the first and, when it raised
/// its flag, the second.
fn with_exact_rerun(
    nest: &Nest,
    name: &str,
    signature: &Signature,
    dialect: &Dialect,
    body: impl Fn(&mut Printer),
) -> String {
    let print = |name: &str, trig: Trig| {
        let mut printer =
            Printer { nest, name, signature, dialect, trig, tile: None, code: String::new(), parts: String::new() };
        printer.print_parts();
        body(&mut printer);
        let code = std::mem::take(&mut printer.code);
        let function = printer.function(name, &signature.attribute, &signature.params, code);
        printer.parts + &function
    };
    if !nest.uses_fast_math {
        return print(name, Trig::Exact);
    }
    let (fast_name, rerun_name) = (format!("{name}_fast"), format!("{name}_exact"));
    let (fast, rerun) = (print(&fast_name, Trig::Fast), print(&rerun_name, Trig::Rerun));
    let args = &signature.args;
    let body = dialect.only_if(&dialect.call_value(&fast_name, args), &dialect.call(&rerun_name, args));
    fast + &rerun + &dialect.function(&signature.attribute, name, &signature.params, &format!("  {body}\n"))
}

/// What a kernel's function is declared with: kernels that narrow `f64` to `f32` opt out of
/// SLP vectorisation (see the prelude's `ANVIL_NO_SLP`).
fn function_attribute(nest: &Nest, dialect: &Dialect) -> &'static str {
    if nest.narrows {
        dialect.annotations.narrowing_kernel
    } else {
        ""
    }
}

/// The flag a kernel printed with fast math raises when an argument is beyond their range.
const FAR: &str = "anvil_far";

/// Prints one flavour of a nest's function and its parts.
struct Printer<'a> {
    nest: &'a Nest,
    name: &'a str,
    signature: &'a Signature,
    dialect: &'a Dialect,
    trig: Trig,
    /// The variable being tiled and its tile's start and end, while its tiles are printed.
    tile: Option<(usize, String, String)>,
    code: String,
    /// The outlined parts, printed.
    parts: String,
}

impl Printer<'_> {
    /// The function `name` with `body`, declared as the printer's [`Trig`] flavour needs:
    /// with fast math it returns whether an argument was beyond their range.
    fn function(&self, name: &str, attribute: &str, params: &[String], body: String) -> String {
        let attributes = self.flavour_attributes(attribute);
        if self.trig == Trig::Fast {
            self.dialect.flag_function(&attributes, name, params, &flagged(&body, self.dialect))
        } else {
            self.dialect.function(&attributes, name, params, &body)
        }
    }

    /// `attribute` and those of the printer's [`Trig`] flavour: the fast and rerun
    /// functions are called only from the kernel's function, the rerun rarely.
    fn flavour_attributes(&self, attribute: &str) -> String {
        match self.trig {
            Trig::Exact => attribute.to_string(),
            Trig::Fast => format!("{attribute}{}", self.dialect.annotations.internal),
            Trig::Rerun => format!("{attribute}{}{}", self.dialect.annotations.cold, self.dialect.annotations.internal),
        }
    }

    /// Prints each outlined part as a function taking the kernel's buffers, the loop
    /// variables bound where it is called and the outer temporaries it reads.
    fn print_parts(&mut self) {
        for (p, part) in self.nest.parts.iter().enumerate() {
            // A part may not use every buffer or loop variable: no unused-parameter warnings.
            let mut params: Vec<String> = self
                .signature
                .params
                .iter()
                .map(|p| {
                    if p.starts_with(self.dialect.maybe_unused) {
                        p.clone()
                    } else {
                        format!("{} {p}", self.dialect.maybe_unused)
                    }
                })
                .collect();
            for &v in &part.vars {
                params.push(format!(
                    "{} {}",
                    self.dialect.maybe_unused,
                    self.dialect.parameter(self.dialect.type_name(DType::I64), &self.dialect.var(v))
                ));
            }
            for &(e, dtype) in &part.temps {
                params.push(self.dialect.parameter(&self.dialect.pointee(dtype, false), &format!("t{e}")));
            }
            self.block(&part.body, 1);
            let code = std::mem::take(&mut self.code);
            let attribute = match self.trig {
                Trig::Exact => format!("{}{}", self.signature.attribute, self.dialect.annotations.internal),
                _ => self.signature.attribute.clone(),
            };
            let function = self.function(&self.part_name(p), &attribute, &params, code);
            self.parts += &function;
        }
    }

    fn part_name(&self, p: usize) -> String {
        format!("{}_part{p}", self.name)
    }

    fn block(&mut self, statements: &[Stmt], depth: usize) {
        for statement in statements {
            self.statement(statement, depth);
        }
    }

    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.code, "{}{text}", "  ".repeat(depth));
    }

    fn statement(&mut self, statement: &Stmt, depth: usize) {
        let [open, close] = self.dialect.statements.block;
        match statement {
            Stmt::Let { id, dtype, value } => {
                let value = self.value(value);
                self.line(depth, &self.dialect.binding(self.dialect.type_name(*dtype), &format!("t{id}"), &value));
            }
            Stmt::CheckFar(x) => {
                if self.trig == Trig::Fast {
                    self.line(depth, &self.dialect.raise(FAR, &self.dialect.trig_far(&self.operand(x))));
                }
            }
            &Stmt::Accumulator { id, op, dtype } => {
                let init = self.dialect.literal(reduce_identity(op, dtype), dtype);
                self.line(depth, &self.dialect.variable(self.dialect.type_name(dtype), &format!("t{id}"), &init));
            }
            &Stmt::LocalArray { id, op, dtype, length, var, extent } => {
                let array = format!("t{id}");
                self.line(depth, &self.dialect.local_array(self.dialect.type_name(dtype), &array, &length.to_string()));
                let (first, end) = self.loop_bounds(extent);
                let head = self.dialect.loop_head(&self.dialect.var(var), &first, &end);
                let slot = self.dialect.element(&array, &self.array_index(var));
                let init = self.dialect.assign(&slot, &self.dialect.literal(reduce_identity(op, dtype), dtype));
                self.line(depth, &format!("{head} {open} {init} {close}"));
            }
            &Stmt::Loop { var, extent, hint, ref body } => {
                match hint {
                    Hint::None | Hint::Grid | Hint::Lanes(_) => {}
                    Hint::Items => self.line(depth, self.dialect.annotations.items_loop),
                    Hint::Reduction(op, acc) => {
                        let annotation = match op {
                            crate::graph::ReduceOp::Prod => self.dialect.annotations.prod_loop,
                            _ => self.dialect.annotations.sum_loop,
                        };
                        self.line(depth, &self.dialect.annotate(annotation, &[&format!("t{acc}")]));
                    }
                }
                if let Extent::Range(lo, hi) = extent {
                    let unrolled = (hi - lo).max(0) as usize * crate::lower::nest::statements(body);
                    let spread = matches!(hint, Hint::Grid | Hint::Lanes(_));
                    if !spread && self.dialect.unroll_budget > 0 && unrolled <= self.dialect.unroll_budget {
                        self.line(depth, self.dialect.annotations.unrolled_loop);
                    }
                }
                let (first, end) = self.loop_bounds(extent);
                let var = self.dialect.var(var);
                let head = match hint {
                    Hint::Grid => self.dialect.grid_loop_head(&var, &first, &end),
                    Hint::Lanes(lanes) => self.dialect.lanes_loop_head(&var, &first, &end, lanes),
                    _ => self.dialect.loop_head(&var, &first, &end),
                };
                self.line(depth, &format!("{head} {open}"));
                self.block(body, depth + 1);
                self.line(depth, close);
            }
            Stmt::OnThreads(count, body) => {
                let guard = fill(self.dialect.statements.on_threads, &[&count.to_string()]);
                self.line(depth, &format!("{guard} {open}"));
                self.block(body, depth + 1);
                self.line(depth, close);
            }
            &Stmt::StorePartial { acc, dtype, slot } => {
                let partials = self.partials(dtype, slot);
                let quotient = self.dialect.statements.index_arithmetic[1];
                let warp_of_thread = fill(quotient, &["anvil_thread", &crate::lower::nest::grid::WARP.to_string()]);
                self.line(
                    depth,
                    &self.dialect.assign(&self.dialect.element(&partials, &warp_of_thread), &format!("t{acc}")),
                );
            }
            &Stmt::CombinePartials { acc, op, dtype, slot, lanes } => {
                let (t, partials) = (format!("t{acc}"), self.partials(dtype, slot));
                let init = self.dialect.literal(reduce_identity(op, dtype), dtype);
                self.line(depth, &self.dialect.variable(self.dialect.type_name(dtype), &t, &init));
                let head = fill(self.dialect.statements.partials_loop_head, &[&lanes.to_string()]);
                let fold = self.dialect.combine(op, dtype, &t, &self.dialect.element(&partials, "p"));
                self.line(depth, &format!("{head} {open} {} {close}", self.dialect.assign(&t, &fold)));
            }
            &Stmt::CombineWarp { acc, op, dtype } => {
                let (t, offset) = (format!("t{acc}"), "anvil_offset");
                // The shuffle is bound first: every lane must make it, whatever `op` reads.
                let shuffle = fill(self.dialect.statements.warp_shuffle, &[&t, offset]);
                let other = self.dialect.variable(self.dialect.type_name(dtype), "anvil_other", &shuffle);
                let fold =
                    format!("{other} {}", self.dialect.assign(&t, &self.dialect.combine(op, dtype, &t, "anvil_other")));
                for line in fill(self.dialect.statements.warp_combine, &[&fold, &t, offset]).lines() {
                    self.line(depth, line.trim_start());
                }
            }
            Stmt::Fixed { var, value, body } => {
                // One iteration: a block (cheaper for the C++ compiler than a one-trip loop).
                self.line(depth, open);
                self.line(depth + 1, &self.dialect.fixed_index(&self.dialect.var(*var), &value.to_string()));
                self.block(body, depth + 1);
                self.line(depth, close);
            }
            &Stmt::Tiles { var, extent, tile, ref body } => {
                let start = format!("{}_tile", self.dialect.var(var));
                let (step, extent) = (tile.to_string(), extent.to_string());
                self.line(depth, &format!("{} {open}", self.dialect.tile_head(&start, "0", &extent, &step)));
                let end = self.dialect.binary(BinaryOp::Min, DType::I64, &format!("{start} + {step}"), &extent);
                self.tile = Some((var, start, format!("({end})")));
                self.block(body, depth + 1);
                self.tile = None;
                self.line(depth, close);
            }
            Stmt::Stores(stores) => {
                let assignments: Vec<String> = stores
                    .iter()
                    .map(|(b, index, value)| {
                        self.dialect.assign(
                            &self.dialect.element(&format!("b{b}"), &index.spell(self.dialect)),
                            &self.operand(value),
                        )
                    })
                    .collect();
                self.line(depth, &assignments.join(" "));
            }
            Stmt::ScatterAdd { out, index, len, value, dtype } => {
                let slot = self.dialect.element(&format!("b{out}"), &clamped(&self.operand(index), *len, self.dialect));
                let add = self.dialect.binary(BinaryOp::Add, *dtype, &slot, &self.operand(value));
                self.line(depth, &self.dialect.assign(&slot, &add));
            }
            Stmt::Accumulate { acc, op, dtype, value } => {
                let acc = self.operand(acc);
                self.line(
                    depth,
                    &self.dialect.assign(&acc, &self.dialect.combine(*op, *dtype, &acc, &self.operand(value))),
                );
            }
            &Stmt::Zero { buffer, len, dtype } => {
                let head = self.dialect.loop_head("i", "0", &len.to_string());
                let zero = self.dialect.assign(
                    &self.dialect.element(&format!("b{buffer}"), "i"),
                    &self.dialect.literal(Literal::Int(0), dtype),
                );
                self.line(depth, &format!("{head} {zero}"));
            }
            &Stmt::Call(p) => {
                let part = &self.nest.parts[p];
                let mut args = self.signature.args.clone();
                args.extend(part.vars.iter().map(|&v| self.dialect.var(v)));
                args.extend(part.temps.iter().map(|(e, _)| format!("t{e}")));
                let name = self.part_name(p);
                let call = if self.trig == Trig::Fast {
                    self.dialect.raise(FAR, &self.dialect.call_value(&name, &args))
                } else {
                    self.dialect.call(&name, &args)
                };
                self.line(depth, &call);
            }
        }
    }

    /// The first value and the end (exclusive) of a loop.
    fn loop_bounds(&self, extent: Extent) -> (String, String) {
        match (extent, &self.tile) {
            (Extent::Range(lo, hi), _) => (lo.to_string(), hi.to_string()),
            (Extent::Tile, Some((_, start, end))) => (start.clone(), end.clone()),
            (Extent::Tile, None) => unreachable!("the verifier checks that tile loops are inside their tiles"),
        }
    }

    /// The partials of split reduction `slot`, as an array of `dtype`.
    fn partials(&self, dtype: DType, slot: usize) -> String {
        let offset = slot * crate::lower::nest::grid::LANES * 8;
        fill(self.dialect.statements.partials, &[self.dialect.type_name(dtype), &offset.to_string()])
    }

    /// The element of a local array at the current point of loop `var`.
    fn array_index(&self, var: usize) -> String {
        match &self.tile {
            Some((v, start, _)) if *v == var => self.dialect.sum(&self.dialect.var(var), start, true),
            _ => self.dialect.var(var),
        }
    }

    fn operand(&self, operand: &Operand) -> String {
        match *operand {
            Operand::Literal(v, dtype) => self.dialect.literal(v, dtype),
            Operand::Temp(e) => format!("t{e}"),
            Operand::Element { array, var } => self.dialect.element(&format!("t{array}"), &self.array_index(var)),
        }
    }

    fn value(&self, value: &Value) -> String {
        match value {
            Value::Load { buffer, index, len, clamp_below, clamp_above } => {
                load(*buffer, &index.spell(self.dialect), *clamp_below, *clamp_above, *len, self.dialect)
            }
            Value::Gather { buffer, index, len, dtype, in_range } => {
                if *len == 0 {
                    self.dialect.literal(Literal::Int(0), *dtype)
                } else if *in_range {
                    self.dialect.element(&format!("b{buffer}"), &self.operand(index))
                } else {
                    self.dialect.element(&format!("b{buffer}"), &clamped(&self.operand(index), *len, self.dialect))
                }
            }
            Value::InBounds(bounds) if bounds.is_empty() => self.dialect.literal(Literal::Bool(true), DType::Bool),
            Value::InBounds(bounds) => {
                let tests: Vec<String> = bounds
                    .iter()
                    .map(|b| self.dialect.in_range(&b.expr.spell(self.dialect), &b.lo.to_string(), &b.hi.to_string()))
                    .collect();
                format!("({})", tests.join(self.dialect.statements.and))
            }
            Value::Unary(op, x, dtype, math) => {
                let x = self.operand(x);
                match (math, self.trig) {
                    (Math::Fast, Trig::Fast) => self.dialect.fast_unary(*op, *dtype, &x).expect("scheduled as fast"),
                    (Math::Scalar, _) => self.dialect.unary(*op, *dtype, &x, false),
                    _ => self.dialect.unary(*op, *dtype, &x, true),
                }
            }
            Value::Binary(op, a, b, dtype) => self.dialect.binary(*op, *dtype, &self.operand(a), &self.operand(b)),
            Value::Where(c, a, b) => self.dialect.select(&self.operand(c), &self.operand(a), &self.operand(b)),
            Value::Cast(x, from, to) => self.dialect.cast(*from, *to, &self.operand(x)),
        }
    }
}

/// A function body `body` that raises the flag [`FAR`] and returns it.
fn flagged(body: &str, dialect: &Dialect) -> String {
    // As wide as a double: a narrower flag would make GCC vectorise with twice the lanes
    // (two vectors per double), doubling code and compile time.
    let flag = dialect.variable(dialect.type_name(DType::I64), FAR, &dialect.literal(Literal::Int(0), DType::I64));
    format!("  {flag}\n{body}  {}\n", dialect.return_value(FAR))
}

/// `b<buffer>[index]`, with the index clamped into `0..len` on the sides where it can
/// leave it (padded reads, whose value is masked by the caller).
fn load(buffer: BufferId, index: &str, below: bool, above: bool, len: usize, dialect: &Dialect) -> String {
    let mut i = index.to_string();
    if above {
        let last = len.saturating_sub(1).to_string();
        i = dialect.select(&format!("({i}) > {last}"), &last, &format!("({i})"));
    }
    if below {
        i = dialect.select(&format!("({index}) < 0"), "0", &i);
    }
    dialect.element(&format!("b{buffer}"), &i)
}

/// A computed index clamped into `0..len` (the interpreter clamps the same way).
fn clamped(index: &str, len: usize, dialect: &Dialect) -> String {
    let last = (len - 1).to_string();
    let below_end = dialect.select(&format!("{index} > {last}"), &last, index);
    dialect.select(&format!("{index} < 0"), "0", &format!("({below_end})"))
}

//! The verifier of nests: what a renderer relies on, checked after scheduling in debug
//! builds and by the tests.

use super::*;
use crate::lower::kernel::{ExprId, Kernel};

/// Checks the invariants a renderer relies on: every temporary, array element and loop
/// variable is read only where it is defined (in the statement's scope, an enclosing one,
/// or passed to its part), no temporary is defined twice in one scope path, every loop
/// stays within its variable's extent, and every load not clamped stays inside its buffer.
///
/// ```
/// use anvil::{Tensor, DType, internals::lower::{lower, nest::{schedule, verify, Form}}};
/// let x = Tensor::input(0, [64, 48], DType::F64);
/// let program = lower(&[x.sum_axes(1, false).node().unwrap().clone()], &[(DType::F64, vec![64, 48])]);
/// let kernel = &program.kernels[0];
/// assert_eq!(verify(&schedule(kernel, Form::Loops, |_, _| false), kernel), Ok(()));
/// ```
pub fn verify(nest: &Nest, kernel: &Kernel) -> Result<(), String> {
    let mut checker = Checker { nest, kernel, scope: Scope::new(kernel), tile: None };
    checker.block(&nest.body)?;
    Ok(())
}

/// What is defined at a point of a nest.
#[derive(Clone)]
struct Scope {
    temps: Vec<bool>,
    arrays: Vec<Option<usize>>,
    /// The range (inclusive) of each bound loop variable.
    ranges: Vec<Option<(i64, i64)>>,
}

impl Scope {
    fn new(kernel: &Kernel) -> Self {
        let n = kernel.exprs.len();
        Scope { temps: vec![false; n], arrays: vec![None; n], ranges: vec![None; kernel.extents.len()] }
    }
}

struct Checker<'a> {
    nest: &'a Nest,
    kernel: &'a Kernel,
    scope: Scope,
    /// The variable being tiled, and its tile's range.
    tile: Option<(usize, (i64, i64))>,
}

impl Checker<'_> {
    /// Checks `statements` in a scope of their own.
    fn block(&mut self, statements: &[Stmt]) -> Result<(), String> {
        let enclosing = self.scope.clone();
        let result = statements.iter().try_for_each(|s| self.statement(s));
        self.scope = enclosing;
        result
    }

    /// Checks `statements` run with loop variable `var` in `range`.
    fn with_var(&mut self, var: usize, range: (i64, i64), statements: &[Stmt]) -> Result<(), String> {
        let extent = *self.kernel.extents.get(var).ok_or(format!("loop over unknown variable i{var}"))? as i64;
        if self.scope.ranges[var].is_some() {
            return Err(format!("loop variable i{var} bound twice"));
        }
        // An empty range is a loop over a zero extent.
        if range.0 <= range.1 && (range.0 < 0 || range.1 >= extent) {
            return Err(format!("i{var} takes {}..={} outside its extent {extent}", range.0, range.1));
        }
        self.scope.ranges[var] = Some(range);
        let result = self.block(statements);
        self.scope.ranges[var] = None;
        result
    }

    fn range_of(&self, var: usize, extent: Extent) -> Result<(i64, i64), String> {
        match (extent, self.tile) {
            (Extent::Range(lo, hi), _) => Ok((lo, hi - 1)),
            (Extent::Tile, Some((v, range))) if v == var => Ok(range),
            (Extent::Tile, _) => Err(format!("a loop over i{var}'s tile outside its tiles")),
        }
    }

    fn define(&mut self, id: ExprId) -> Result<(), String> {
        match self.scope.temps.get_mut(id) {
            Some(defined) if !*defined => {
                *defined = true;
                Ok(())
            }
            Some(_) => Err(format!("t{id} defined twice")),
            None => Err(format!("t{id} is not an expression of the kernel")),
        }
    }

    fn read(&self, operand: &Operand) -> Result<(), String> {
        match *operand {
            Operand::Literal(..) => Ok(()),
            Operand::Temp(id) if self.scope.temps.get(id) == Some(&true) => Ok(()),
            Operand::Temp(id) => Err(format!("t{id} read where it is not defined")),
            Operand::Element { array, var } => match self.scope.arrays.get(array) {
                Some(Some(v)) if *v == var && self.scope.ranges[var].is_some() => Ok(()),
                _ => Err(format!("element of t{array} read outside its array's loop over i{var}")),
            },
        }
    }

    /// The ranges of the variables, unbound ones at their full extent (only bound ones are
    /// read by well-formed indices; the others are reported by [`Self::index_bound`]).
    fn ranges(&self) -> Vec<(i64, i64)> {
        self.scope.ranges.iter().zip(&self.kernel.extents).map(|(r, &n)| r.unwrap_or((0, n as i64 - 1))).collect()
    }

    fn index_bound(&self, index: &IndexExpr) -> Result<(i64, i64), String> {
        let mut vars = Vec::new();
        index.vars(&mut vars);
        match vars.iter().find(|&&v| !matches!(self.scope.ranges.get(v), Some(Some(_)))) {
            Some(v) => Err(format!("index {index} reads i{v} outside its loop")),
            None => Ok(index.bounds_in(&self.ranges())),
        }
    }

    fn value(&self, value: &Value) -> Result<(), String> {
        match value {
            Value::Load { buffer, index, len, clamp_below, clamp_above } => {
                let (lo, hi) = self.index_bound(index)?;
                if (lo < 0 && !clamp_below) || (hi >= *len as i64 && !clamp_above) {
                    return Err(format!("load of b{buffer}[{index}] leaves 0..{len} unclamped"));
                }
                Ok(())
            }
            Value::Gather { index, .. } => self.read(index),
            Value::InBounds(bounds) => bounds.iter().try_for_each(|b| self.index_bound(&b.expr).map(|_| ())),
            Value::Unary(_, x, _, _) | Value::Cast(x, _, _) => self.read(x),
            Value::Binary(_, a, b, _) => [a, b].into_iter().try_for_each(|x| self.read(x)),
            Value::Where(c, a, b) => [c, a, b].into_iter().try_for_each(|x| self.read(x)),
        }
    }

    fn statement(&mut self, statement: &Stmt) -> Result<(), String> {
        match statement {
            Stmt::Let { id, value, .. } => {
                self.value(value)?;
                self.define(*id)
            }
            Stmt::CheckFar(x) => self.read(x),
            Stmt::Accumulator { id, .. } => self.define(*id),
            &Stmt::LocalArray { id, var, extent, .. } => {
                self.range_of(var, extent)?;
                if self.scope.arrays[id].replace(var).is_some() {
                    return Err(format!("array t{id} declared twice"));
                }
                Ok(())
            }
            &Stmt::Loop { var, extent, ref body, .. } => {
                let range = self.range_of(var, extent)?;
                self.with_var(var, range, body)
            }
            &Stmt::Fixed { var, value, ref body } => self.with_var(var, (value, value), body),
            Stmt::OnThreads(_, body) => self.block(body),
            Stmt::StorePartial { acc, .. } | Stmt::CombineWarp { acc, .. } => self.read(&Operand::Temp(*acc)),
            Stmt::CombinePartials { acc, .. } => self.define(*acc),
            &Stmt::Tiles { var, extent, tile, ref body } => {
                if tile == 0 || extent != self.kernel.extents[var] {
                    return Err(format!("tiles of i{var} do not cover its extent"));
                }
                let enclosing = self.tile.replace((var, (0, extent as i64 - 1)));
                let result = self.block(body);
                self.tile = enclosing;
                result
            }
            Stmt::Stores(stores) => stores.iter().try_for_each(|(_, index, value)| {
                self.index_bound(index)?;
                self.read(value)
            }),
            Stmt::ScatterAdd { index, value, .. } => [index, value].into_iter().try_for_each(|x| self.read(x)),
            Stmt::Accumulate { acc, value, .. } => {
                if matches!(acc, Operand::Literal(..)) {
                    return Err("an accumulator that is a literal".into());
                }
                [acc, value].into_iter().try_for_each(|x| self.read(x))
            }
            Stmt::Zero { .. } => Ok(()),
            Stmt::Call(p) => self.call(*p),
        }
    }

    /// Checks a call of part `p`: what it is passed is defined here, and its body is well
    /// formed with exactly that defined.
    fn call(&mut self, p: usize) -> Result<(), String> {
        let part = self.nest.parts.get(p).ok_or(format!("call of missing part {p}"))?;
        for &(id, _) in &part.temps {
            self.read(&Operand::Temp(id)).map_err(|m| format!("part {p}: {m}"))?;
        }
        if let Some(v) = part.vars.iter().find(|&&v| self.scope.ranges[v].is_none()) {
            return Err(format!("part {p} is passed i{v} outside its loop"));
        }
        let enclosing = std::mem::replace(&mut self.scope, Scope::new(self.kernel));
        for &(id, _) in &part.temps {
            self.scope.temps[id] = true;
        }
        for &v in &part.vars {
            self.scope.ranges[v] = enclosing.ranges[v];
        }
        let result = self.block(&part.body).map_err(|m| format!("part {p}: {m}"));
        self.scope = enclosing;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::lower;
    use crate::{DType, Tensor};

    /// The nest of the one kernel of `x ↦ sin(pad(x))` over 1000 elements: two edges and an
    /// interior loop reading `x` unclamped.
    fn padded_sine() -> (Kernel, Nest) {
        let x = Tensor::input(0, 1000, DType::F64);
        let y = x.pad(&[(1, 1)]).sin();
        let program = lower(&[y.node().unwrap().clone()], &[(DType::F64, vec![1000])]);
        let kernel = program.kernels[0].clone();
        let nest = schedule(&kernel, Form::Loops, |_, _| false);
        (kernel, nest)
    }

    fn interior(nest: &mut Nest) -> &mut Vec<Stmt> {
        match &mut nest.body[1] {
            Stmt::Loop { body, .. } => body,
            other => panic!("expected the interior loop, got {other:?}"),
        }
    }

    #[test]
    fn the_interior_of_a_padded_loop_reads_unclamped_and_the_edges_read_nothing() {
        let (kernel, mut nest) = padded_sine();
        assert_eq!(verify(&nest, &kernel), Ok(()));
        let loads =
            |body: &[Stmt]| body.iter().filter(|s| matches!(s, Stmt::Let { value: Value::Load { .. }, .. })).count();
        let edges: Vec<&Vec<Stmt>> = [&nest.body[0], &nest.body[2]]
            .into_iter()
            .map(|s| match s {
                Stmt::Fixed { body, .. } => body,
                other => panic!("expected an edge, got {other:?}"),
            })
            .collect();
        assert!(edges.iter().all(|body| loads(body) == 0), "the padding is sin(0): no read");
        let body = interior(&mut nest);
        assert_eq!(loads(body), 1);
        assert!(body.iter().all(|s| !matches!(s, Stmt::Let { value: Value::Load { clamp_below: true, .. }, .. })));
    }

    #[test]
    fn sines_are_fast_only_in_loops_long_enough_to_pay_for_their_code() {
        let fast = |op: UnaryOp, dtype: DType| matches!(op, UnaryOp::Sin) && dtype == DType::F64;
        let sine_nest = |n: usize| {
            let x = Tensor::input(0, n, DType::F64);
            let y = x.sin() * 2.0;
            let options = crate::lower::LowerOptions::loops_only();
            let program = crate::lower::lower_with(&[y.node().unwrap().clone()], &[(DType::F64, vec![n])], &options);
            schedule(&program.kernels[0], Form::Loops, fast)
        };
        let math = |nest: &Nest| match &nest.body[..] {
            [Stmt::Loop { body, .. }] => body.iter().find_map(|s| match s {
                Stmt::Let { value: Value::Unary(UnaryOp::Sin, _, _, math), .. } => Some(*math),
                _ => None,
            }),
            other => panic!("expected one loop, got {other:?}"),
        };
        let long = sine_nest(FAST_MATH_MIN_TRIPS as usize);
        assert!(long.uses_fast_math);
        assert_eq!(math(&long), Some(Math::Fast));
        let short = sine_nest(FAST_MATH_MIN_TRIPS as usize - 1);
        assert!(!short.uses_fast_math);
        assert_eq!(math(&short), Some(Math::Vector));
        // Straight-line code run over a batch of items: as long as the batch.
        let x = Tensor::input(0, 3, DType::F64);
        let program = lower(&[x.sin().node().unwrap().clone()], &[(DType::F64, vec![3])]);
        assert!(schedule(&program.kernels[0], Form::Items, fast).uses_fast_math);
        assert!(!schedule(&program.kernels[0], Form::Loops, fast).uses_fast_math);
    }

    /// Every unary math statement of `statements` (nested ones included), with its math.
    fn unary_math(statements: &[Stmt], out: &mut Vec<(UnaryOp, Math)>) {
        for s in statements {
            match s {
                Stmt::Let { value: Value::Unary(op, _, _, math), .. } => out.push((*op, *math)),
                Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } => unary_math(body, out),
                _ => {}
            }
        }
    }

    #[test]
    fn an_unrolled_innermost_loop_computes_in_the_vector_loop_around_it() {
        // A banded sparse Jacobian: the loop over each column's two non-zeros is split into
        // two one-iteration blocks, straight-line code in the body of the loop over the
        // columns, which vectorises. Spelled as scalar code there, GCC merged the sine and
        // cosine of one argument into a scalar sincos and kept that loop scalar (7.6x slower).
        let f = crate::NumericalFunction::new(
            "band",
            |[x]| {
                let (head, tail) = (x.shrink(&[(0, 499)]), x.shrink(&[(1, 500)]));
                tail.sin() * head.cos() + tail.cos()
            },
            [crate::Arg::new(500)],
        )
        .unwrap();
        let jacobian = crate::function::ad::spjacobian(&f).unwrap();
        let kernel =
            jacobian.program().kernels.iter().find(|k| k.shape.iter().any(|&n| n > 100)).expect("a loop over the band");
        let nest = schedule(kernel, Form::Loops, |_, _| false);
        let Stmt::Loop { body, .. } = &nest.body[0] else { panic!("expected the loop over x: {:?}", nest.body) };
        assert!(body.iter().any(|s| matches!(s, Stmt::Fixed { .. })), "{body:?}");
        let mut math = Vec::new();
        unary_math(&nest.body, &mut math);
        assert!(math.iter().any(|(op, _)| *op == UnaryOp::Sin) && math.iter().any(|(op, _)| *op == UnaryOp::Cos));
        assert!(math.iter().all(|(_, m)| *m == Math::Vector), "{math:?}");
    }

    /// Every statement of `body`, nested ones included.
    fn all_statements<'a>(body: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
        for s in body {
            out.push(s);
            if let Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } = s {
                all_statements(body, out);
            }
        }
    }

    #[test]
    fn a_small_matrix_joined_from_columns_is_unrolled_into_one_store_per_element() {
        // 12 columns of 12 products each (too large for straight-line lowering): looped, every
        // element would select its value through the joins of columns and rows; unrolled, it
        // stores its own value, and each product is computed once.
        let n = 12;
        let x = Tensor::input(0, n, DType::F64);
        let column =
            |j: usize| Tensor::stack(&(0..n).map(|i| x.get(i as isize) * x.get(j as isize)).collect::<Vec<_>>(), 0);
        let m = Tensor::stack(&(0..n).map(column).collect::<Vec<_>>(), 1);
        let program = lower(&[m.node().unwrap().clone()], &[(DType::F64, vec![n])]);
        assert_eq!(program.kernels.len(), 1);
        let kernel = &program.kernels[0];
        let nest = schedule(kernel, Form::Loops, |_, _| false);
        assert_eq!(verify(&nest, kernel), Ok(()));
        let mut statements = Vec::new();
        all_statements(&nest.body, &mut statements);
        assert!(!statements.iter().any(|s| matches!(s, Stmt::Loop { .. })));
        assert!(!statements.iter().any(|s| matches!(s, Stmt::Let { value: Value::Where(..), .. })));
        let stores: usize = statements.iter().map(|s| if let Stmt::Stores(v) = s { v.len() } else { 0 }).sum();
        assert_eq!(stores, n * n);
        let products = statements.iter().filter(|s| matches!(s, Stmt::Let { value: Value::Binary(..), .. })).count();
        assert_eq!(products, n * n, "each element's product, once");
    }

    #[test]
    fn the_verifier_rejects_an_unclamped_load_outside_its_buffer() {
        let (kernel, mut nest) = padded_sine();
        if let Stmt::Loop { extent, .. } = &mut nest.body[1] {
            *extent = Extent::Range(0, 1001); // the interior widened over the first edge
        }
        let error = verify(&nest, &kernel).unwrap_err();
        assert!(error.contains("unclamped"), "{error}");
    }

    #[test]
    fn the_verifier_rejects_a_temporary_read_before_it_is_defined() {
        let (kernel, mut nest) = padded_sine();
        let body = interior(&mut nest);
        let first = body.iter().position(|s| matches!(s, Stmt::Let { .. })).unwrap();
        body.remove(first);
        let error = verify(&nest, &kernel).unwrap_err();
        assert!(error.contains("read where it is not defined"), "{error}");
    }

    #[test]
    fn the_verifier_rejects_loops_beyond_their_extent_and_rebinding() {
        let (kernel, nest) = padded_sine();
        let mut beyond = nest.clone();
        if let Stmt::Fixed { value, .. } = &mut beyond.body[2] {
            *value = 1002;
        }
        assert!(verify(&beyond, &kernel).unwrap_err().contains("outside its extent"));
        let mut nested = nest.clone();
        let inner = nested.body[0].clone();
        interior(&mut nested).push(inner);
        assert!(verify(&nested, &kernel).unwrap_err().contains("bound twice"));
        let mut missing_part = nest;
        missing_part.body.push(Stmt::Call(0));
        assert!(verify(&missing_part, &kernel).unwrap_err().contains("missing part"));
    }
}

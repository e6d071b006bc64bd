//! The solver's C++: declarations, the SQP loop with its QP glue, and the JIT shim, from the
//! templates in `templates/`.

use super::derive::{Derived, Matrix, Storage};
use super::ipm::{stage_kkt, IpmForm, SparseKkt};
use super::layout::{Gathered, Layout};
use super::settings::{HessianApproximation, SettingField, SqpSettings, Status, MAX_MERIT_MEMORY};
use super::solver::Bounds;
use super::stagewise::{Dynamics, StageCall, StageDerived, StageMultipliers, StageRole, TermLayout};
use crate::render::ItemSource;
use minijinja::{context, Environment, Value};
use serde::Serialize;
use std::sync::OnceLock;

fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        crate::render::template_environment(&[
            ("solver_header.j2", include_str!("templates/solver_header.j2")),
            ("sqp_source.j2", include_str!("templates/sqp_source.j2")),
            ("matrices.j2", include_str!("templates/matrices.j2")),
            ("sqp_common.j2", include_str!("templates/sqp_common.j2")),
            ("solver_inputs.j2", include_str!("templates/solver_inputs.j2")),
            ("sqp_solve.j2", include_str!("templates/sqp_solve.j2")),
            ("sqp_filter.j2", include_str!("templates/sqp_filter.j2")),
            ("convexify.j2", include_str!("templates/convexify.j2")),
            ("qp_piqp.j2", include_str!("templates/qp_piqp.j2")),
            ("qp_ipm.j2", include_str!("templates/qp_ipm.j2")),
            ("qp_ipm_types.j2", include_str!("templates/qp_ipm_types.j2")),
            ("kkt_types.j2", include_str!("templates/kkt_types.j2")),
            ("elastic.j2", include_str!("templates/elastic.j2")),
            ("solver_jit.j2", include_str!("templates/solver_jit.j2")),
            ("ms_source.j2", include_str!("templates/ms_source.j2")),
            ("ms_blocks.j2", include_str!("templates/ms_blocks.j2")),
            ("ms_terms.j2", include_str!("templates/ms_terms.j2")),
            ("ms_calls.j2", include_str!("templates/ms_calls.j2")),
            ("ms_riccati.j2", include_str!("templates/ms_riccati.j2")),
            ("ms_qp.j2", include_str!("templates/ms_qp.j2")),
            ("ipm_source.j2", include_str!("templates/ipm_source.j2")),
            ("ipm_ms_source.j2", include_str!("templates/ipm_ms_source.j2")),
            ("ipm_solve.j2", include_str!("templates/ipm_solve.j2")),
            ("shared_header.j2", include_str!("templates/shared_header.j2")),
            ("shared_source.j2", include_str!("templates/shared_source.j2")),
        ])
    })
}

pub(crate) fn render(template: &str, ctx: Value) -> String {
    templates().get_template(template).and_then(|t| t.render(ctx)).expect("anvil's own templates render")
}

/// What the templates need to know about a solver.
pub(crate) struct SolverLayout<'a> {
    pub name: &'a str,
    pub storage: Storage,
    pub qp: GeneralQp<'a>,
    pub settings: &'a SqpSettings,
    pub derived: &'a Derived,
    pub nx: usize,
    pub neq: usize,
    pub nineq: usize,
    pub np: usize,
    pub x_lb: &'a [f64],
    pub x_ub: &'a [f64],
    /// Bounds of the QP's inequality rows (`derived.q_rows`).
    pub q_lb: Vec<f64>,
    pub q_ub: Vec<f64>,
}

/// Who solves a whole-problem SQP solver's QPs.
pub(crate) enum GeneralQp<'a> {
    /// PIQP, through the runtime library (`qp_piqp.j2`, `elastic.j2`).
    Piqp,
    /// anvil's interior-point method (`qp_ipm.j2`), its KKT matrix dense or sparse on `kkt`.
    Ipm { kkt: Option<&'a SparseKkt> },
}

/// A double as a C++ literal that reads back exactly (`kInf` for infinity).
pub(crate) fn cpp_f64(v: f64) -> String {
    if v == f64::INFINITY {
        "kInf".into()
    } else if v == f64::NEG_INFINITY {
        "-kInf".into()
    } else {
        format!("{v:e}")
    }
}

fn join<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    items.into_iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

#[derive(Serialize)]
struct MatrixContext {
    id: &'static str,
    what: &'static str,
    sparse: bool,
    rows: usize,
    cols: usize,
    nnz: usize,
    outer: String,
    inner: String,
}

fn matrix_context(id: &'static str, what: &'static str, m: &Matrix) -> MatrixContext {
    match m {
        Matrix::Dense { rows, cols } => MatrixContext {
            id,
            what,
            sparse: false,
            rows: *rows,
            cols: *cols,
            nnz: rows * cols,
            outer: String::new(),
            inner: String::new(),
        },
        Matrix::Sparse(p) => {
            let ((rows, cols), (outer, inner)) = (p.shape(), p.csc());
            MatrixContext { id, what, sparse: true, rows, cols, nnz: p.nnz(), outer: join(outer), inner: join(inner) }
        }
    }
}

/// The positions of the diagonal entries among a square pattern's stored values.
fn diagonal_positions(m: &Matrix) -> String {
    match m {
        Matrix::Sparse(p) => {
            let entries = p.csc_entries();
            join(entries.iter().enumerate().filter(|(_, (i, j))| i == j).map(|(k, _)| k))
        }
        Matrix::Dense { .. } => String::new(),
    }
}

#[derive(Serialize)]
struct GatheredContext {
    id: &'static str,
    what: &'static str,
    rows: usize,
    cols: usize,
    nnz: usize,
    outer: String,
    inner: String,
    source: String,
}

fn gathered_context(id: &'static str, what: &'static str, g: &Gathered) -> GatheredContext {
    GatheredContext {
        id,
        what,
        rows: g.rows,
        cols: g.cols,
        nnz: g.nnz(),
        outer: join(&g.outer),
        inner: join(&g.inner),
        source: join(&g.source),
    }
}

#[derive(Serialize)]
struct StatusContext {
    name: &'static str,
    code: i32,
}

/// Every status as the generated `enum class Status` declares it.
fn statuses() -> Vec<StatusContext> {
    Status::ALL.iter().map(|s| StatusContext { name: s.cpp_name(), code: *s as i32 }).collect()
}

fn layout_context(l: &SolverLayout) -> Value {
    let d = l.derived;
    let matrices = [
        matrix_context("JacEq", "Jacobian of the equality constraints", &d.jac_eq),
        matrix_context("JacQ", "Jacobian of the QP's inequality rows", &d.jac_q),
        matrix_context("Hess", "Hessian (upper triangle, with its diagonal)", &d.hess),
    ];
    let statuses = statuses();
    let sparse = l.storage == Storage::Sparse;
    let (ipm_qp, kkt) = match l.qp {
        GeneralQp::Piqp => (false, None),
        GeneralQp::Ipm { kkt } => (true, kkt.map(kkt_context)),
    };
    let method = match (ipm_qp, sparse) {
        (false, true) => "with PIQP sparse QPs",
        (false, false) => "with PIQP dense QPs",
        (true, true) => "with interior-point QPs (sparse LDL')",
        (true, false) => "with interior-point QPs (dense LDL')",
    };
    let layout = Layout::new(l.nx, &d.jac_eq, &d.jac_q, &d.hess);
    let gathered = [
        gathered_context("Kkt", "KKT matrix of the convexity test (upper triangle)", &layout.kkt),
        gathered_context("ElasticP", "the elastic QP's Hessian (upper triangle)", &layout.elastic_p),
        gathered_context("ElasticA", "the elastic QP's equality rows", &layout.elastic_a),
        gathered_context("ElasticG", "the elastic QP's inequality rows", &layout.elastic_g),
    ];
    let src = layout.sources;
    let sources = context! {
        jac_eq => src.jac_eq, jac_q => src.jac_q, diagonal => src.diagonal,
        minus_one => src.minus_one, plus_one => src.plus_one, len => src.len,
    };
    context! {
        sources, gathered,
        name => l.name,
        sparse, ipm_qp, kkt,
        nx => l.nx, neq => l.neq, nineq => l.nineq, np => l.np,
        nq => d.q_rows.len(),
        q_rows => join(&d.q_rows),
        q_lb => join(l.q_lb.iter().map(|&v| cpp_f64(v))),
        q_ub => join(l.q_ub.iter().map(|&v| cpp_f64(v))),
        x_lb => join(l.x_lb.iter().map(|&v| cpp_f64(v))),
        x_ub => join(l.x_ub.iter().map(|&v| cpp_f64(v))),
        matrices,
        hess_diag => diagonal_positions(&d.hess),
        values_fn => global(d.values.name()),
        linearize_fn => global(d.linearize.name()),
        hessian_fn => global(d.hessian.name()),
        settings => l.settings.fields(),
        kind => "SQP solver",
        method,
        max_merit_memory => MAX_MERIT_MEMORY,
        statuses,
    }
}

/// The solver's part of a module.
pub(crate) fn render_solver(layout: &SolverLayout) -> ItemSource {
    let ctx = layout_context(layout);
    ItemSource { header: render("solver_header.j2", ctx.clone()), source: render("sqp_source.j2", ctx) }
}

/// What the templates need to know about an interior-point solver.
pub(crate) struct IpmLayout<'a> {
    pub name: &'a str,
    pub settings: &'a [SettingField],
    pub form: &'a IpmForm,
    pub nx: usize,
    pub neq: usize,
    pub nineq: usize,
    pub np: usize,
    /// Bounds of the variables and of the inequality rows with a finite bound.
    pub bounds: &'a Bounds,
}

/// What the templates need of a sparse KKT structure.
fn kkt_context(k: &SparseKkt) -> Value {
    let f = &k.fronts;
    context! {
        nnz => k.nnz(), l_nnz => f.l_nnz, fronts => f.parent.len(),
        perm => join(&k.perm), a_outer => join(&k.a_outer), a_inner => join(&k.a_inner),
        cols => join(&f.cols), parent => join(&f.parent),
        row_start => join(&f.row_start), rows => join(&f.rows), relative => join(&f.relative),
        rows_len => f.rows.len(),
        asm_start => join(&f.asm_start), asm_src => join(&f.asm_src),
        asm_row => join(&f.asm_row), asm_col => join(&f.asm_col),
        max_front => f.max_front, max_delays => f.max_delays,
        factor_capacity => f.factor_capacity, factor_slack => f.factor_slack,
        stack_capacity => f.stack_capacity, stack_slack => f.stack_slack,
        stack_index_capacity => f.stack_index_capacity, unknown_capacity => f.unknown_capacity,
        hess_dest => join(&k.hess_dest), jac_eq_dest => join(&k.jac_eq_dest), jac_q_dest => join(&k.jac_q_dest),
        diag_x_dest => join(&k.diag_x_dest), diag_y_dest => join(&k.diag_y_dest),
    }
}

/// The interior-point solver's part of a module (the method itself is the `anvil_ipm` item).
pub(crate) fn render_ipm(l: &IpmLayout) -> ItemSource {
    let b = l.bounds;
    let bounds = |v: &[f64]| join(v.iter().map(|&v| cpp_f64(v)));
    let common = context! {
        name => l.name,
        kind => "Interior-point solver",
        nx => l.nx, neq => l.neq, nineq => l.nineq, np => l.np,
        q_lb => bounds(&b.q_lb),
        q_ub => bounds(&b.q_ub),
        settings => l.settings,
        statuses => statuses(),
    };
    let (template, ctx) = match l.form {
        IpmForm::Whole { derived: d, kkt } => {
            let kkt = kkt.as_deref();
            let workspaces = [&d.values, &d.linearize, &d.hessian]
                .iter()
                .zip(["values_ws", "linearize_ws", "hessian_ws"])
                .map(|(f, member)| context! { member, function => global(f.name()) })
                .collect::<Vec<Value>>();
            let ctx = context! {
                method => format!(
                    "by a primal-dual interior-point method with a filter line search, its KKT systems factorised {}",
                    if kkt.is_some() { "as sparse matrices" } else { "densely" }
                ),
                kkt => kkt.map(kkt_context),
                nq => d.q_rows.len(),
                q_rows => join(&d.q_rows),
                x_lb => bounds(&b.x_lb),
                x_ub => bounds(&b.x_ub),
                matrices => [
                    matrix_context("JacEq", "Jacobian of the equality constraints", &d.jac_eq),
                    matrix_context("JacQ", "Jacobian of the inequality rows with a finite bound", &d.jac_q),
                    matrix_context("Hess", "Hessian of the Lagrangian", &d.hess),
                ],
                values_fn => global(d.values.name()),
                linearize_fn => global(d.linearize.name()),
                hessian_fn => global(d.hessian.name()),
                workspaces,
                ..common
            };
            ("ipm_source.j2", ctx)
        }
        IpmForm::Stages(s) => {
            let d = &s.derived;
            let calls = d.calls.iter().enumerate().map(|(i, c)| stage_call_context(i, c, s.nz)).collect::<Vec<_>>();
            let workspaces = d
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| context! { member => format!("ws{i}"), function => global(c.f.name()) })
                .collect::<Vec<Value>>();
            let ctx = context! {
                method => "by a primal-dual interior-point method with a filter line search, its KKT systems \
                           factorised stage by stage",
                nz => s.nz,
                horizon => &s.horizon,
                nq => d.q_rows.len(),
                q_rows => join(&d.q_rows),
                z_lb => bounds(&s.z_lb),
                z_ub => bounds(&s.z_ub),
                bounds_by_stage => s.z_lb.len() > s.nz,
                eq_terms => terms_type(&d.eq, &[]),
                q_terms => terms_type(&d.q, &[]),
                jac_eq_len => jacobian_len(&d.eq, s.nz),
                jac_q_len => jacobian_len(&d.q, s.nz),
                coupled_hessian => if d.coupled_hessian { "true" } else { "false" },
                max_rows => stage_kkt::max_stage_rows(d, l.nx / s.nz),
                usual_front => stage_kkt::usual_front(d, l.nx / s.nz, s.nz).as_ref().map(usual_front_context),
                shared_copies => s.shared_copies,
                calls,
                stage_out_len => stage_out_len(&d.calls, s.nz),
                ng => s.global_param,
                nps => s.stage_param,
                workspaces,
                ..common
            };
            ("ipm_ms_source.j2", ctx)
        }
    };
    ItemSource { header: render("solver_header.j2", ctx.clone()), source: render(template, ctx) }
}

/// The usual stage front's pattern as the template writes it (`compiled_front.hpp`).
fn usual_front_context(front: &stage_kkt::UsualFront) -> Value {
    context! {
        size => front.size,
        pivots => front.pivots,
        entries => join(front.entries.iter().map(|&e| u8::from(e))),
        partners => join(front.partners.iter().map(|p| p.map_or(-1, |row| row as i64))),
    }
}

/// What the templates need to know about a multistage solver with the Riccati backend.
pub(crate) struct StageLayout<'a> {
    pub name: &'a str,
    pub settings: &'a SqpSettings,
    pub derived: &'a StageDerived,
    pub nx: usize,
    pub neq: usize,
    pub nineq: usize,
    pub np: usize,
    pub nz: usize,
    pub global_param: usize,
    pub stage_param: usize,
    pub horizon: &'a str,
    pub z_lb: &'a [f64],
    pub z_ub: &'a [f64],
    pub q_lb: &'a [f64],
    pub q_ub: &'a [f64],
}

/// The C++ type of a list of constraint terms; `identity`: the terms whose blocks end in
/// `[I 0]` (the initial-state and dynamics rows of explicit dynamics).
fn terms_type(terms: &[TermLayout], identity: &[bool]) -> String {
    join(terms.iter().enumerate().map(|(i, t)| {
        let identity = identity.get(i).copied().unwrap_or(false);
        format!(
            "Term<{}, {}, {}, {}, {}, {}, {identity}>",
            t.first, t.count, t.rows, t.coupled, t.row_offset, t.jac_offset
        )
    }))
}

/// Stored values of a list of terms' Jacobian blocks.
fn jacobian_len(terms: &[TermLayout], nz: usize) -> usize {
    terms.iter().map(|t| t.count * t.rows * if t.coupled { 2 * nz } else { nz }).sum()
}

/// What the templates need to call a stage function (the `index`-th) in a loop over its stages.
fn stage_call_context(index: usize, call: &StageCall, nz: usize) -> Value {
    let l = &call.layout;
    let (role, lambda, couples) = match call.role {
        StageRole::Cost => ("cost", "", false),
        StageRole::Eq => ("eq", "", false),
        StageRole::Ineq => ("ineq", "", false),
        StageRole::CostValue => ("cost_value", "", false),
        StageRole::EqValue => ("eq_value", "", false),
        StageRole::IneqValue => ("ineq_value", "", false),
        StageRole::Hessian { lambda, couples } => (
            "hessian",
            match lambda {
                None => "",
                Some(StageMultipliers::Eq) => "lam_eq",
                Some(StageMultipliers::Ineq) => "lam_q",
            },
            couples,
        ),
    };
    context! {
        index, function => global(call.f.name()),
        role, lambda, couples,
        first => l.first, count => l.count, rows => l.rows,
        coupled => l.coupled, width => if l.coupled { 2 * nz } else { nz },
        row_offset => l.row_offset, jac_offset => l.jac_offset,
    }
}

/// Scratch for the stage functions' outputs that are added into place: each cost call's
/// values (and gradients), each Hessian call's blocks (at least one entry).
fn stage_out_len(calls: &[StageCall], nz: usize) -> usize {
    let len = |c: &StageCall| {
        let width = if c.layout.coupled { 2 * nz } else { nz };
        match c.role {
            StageRole::Cost => c.layout.count * (1 + width),
            StageRole::CostValue => c.layout.count,
            StageRole::Hessian { .. } => c.layout.count * width * width,
            StageRole::Eq | StageRole::Ineq | StageRole::EqValue | StageRole::IneqValue => 0,
        }
    };
    calls.iter().map(len).max().unwrap_or(0).max(1)
}

/// The positions of the finite entries of `bounds`.
fn finite(bounds: &[f64]) -> Vec<usize> {
    (0..bounds.len()).filter(|&j| bounds[j].is_finite()).collect()
}

/// The state/control split and where the initial-state and dynamics rows lie, for the
/// Riccati recursion over `(x, u)`; `enabled` false (and sizes of one) without explicit dynamics.
fn dynamics_context(d: &StageDerived) -> Value {
    match (d.dynamics, d.eq.as_slice()) {
        (Some(Dynamics { nx, nu }), [initial, interstage]) => context! {
            enabled => true, nx, nu,
            initial_row => initial.row_offset,
            row => interstage.row_offset,
            jac => interstage.jac_offset,
        },
        _ => context! { enabled => false, nx => 1, nu => 0, initial_row => 0, row => 0, jac => 0 },
    }
}

/// The multistage solver's part of a module.
pub(crate) fn render_multistage(l: &StageLayout) -> ItemSource {
    let d = l.derived;
    let statuses = statuses();
    let ctx = context! {
        name => l.name,
        nx => l.nx, neq => l.neq, nineq => l.nineq, np => l.np,
        nz => l.nz,
        horizon => l.horizon,
        nq => d.q_rows.len(),
        q_rows => join(&d.q_rows),
        q_lb => join(l.q_lb.iter().map(|&v| cpp_f64(v))),
        q_ub => join(l.q_ub.iter().map(|&v| cpp_f64(v))),
        z_lb => join(l.z_lb.iter().map(|&v| cpp_f64(v))),
        z_ub => join(l.z_ub.iter().map(|&v| cpp_f64(v))),
        bounds_by_stage => l.z_lb.len() > l.nz,
        nbl => finite(l.z_lb).len(),
        nbu => finite(l.z_ub).len(),
        lower_idx => join(finite(l.z_lb)),
        upper_idx => join(finite(l.z_ub)),
        eq_terms => terms_type(&d.eq, if d.dynamics.is_some() { &[true, true] } else { &[] }),
        q_terms => terms_type(&d.q, &[]),
        jac_eq_len => jacobian_len(&d.eq, l.nz),
        jac_q_len => jacobian_len(&d.q, l.nz),
        coupled_hessian => if d.coupled_hessian { "true" } else { "false" },
        gauss_newton => if l.settings.hessian_approximation == HessianApproximation::GaussNewton { "true" } else { "false" },
        dynamics => dynamics_context(d),
        calls => d.calls.iter().enumerate().map(|(i, c)| stage_call_context(i, c, l.nz)).collect::<Vec<Value>>(),
        stage_out_len => stage_out_len(&d.calls, l.nz),
        ng => l.global_param,
        nps => l.stage_param,
        settings => l.settings.fields(),
        kind => "SQP solver",
        method => "with anvil's block-tridiagonal (Riccati) interior-point QPs",
        max_merit_memory => MAX_MERIT_MEMORY,
        statuses,
    };
    ItemSource { header: render("solver_header.j2", ctx.clone()), source: render("ms_source.j2", ctx) }
}

/// The `extern "C"` entry points the JIT loads, reading `settings` from its flat array.
pub(crate) fn render_jit_shim(name: &str, settings: &[SettingField]) -> String {
    render("solver_jit.j2", context! { name, settings })
}

/// A name declared at global scope (a function's namespace, a codegen constant) as the
/// solver's namespace spells it: qualified, so that none of the solver's own names (`NX`,
/// `Settings`, `solve`, ...) can shadow it.
pub(crate) fn global(name: &str) -> String {
    format!("::{name}")
}

/// Headers the solver's definitions include.
pub(crate) fn source_includes() -> Vec<String> {
    ["cmath", "cstdio", "limits"].map(String::from).to_vec()
}

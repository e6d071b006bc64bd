//! What every generated solver shares on the host: its sizes, the argument checks of a solve,
//! and the loaded library with its entry points and workspaces.

use super::settings::{Info, INFO_LEN};
use super::solution::{Solution, SolutionMut, WarmStart};
use crate::error::{Error, Result};
use crate::function::{check_identifier, Arg, MAX_NAME_LEN};
use crate::jit::{self, CompilerOptions, Library, Unit, WorkspacePool};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Room the derived functions' names need after a solver's (`_linearize`, `_cost_hess0`).
const SUFFIX_ROOM: usize = 12;

/// A solver's name is an identifier that leaves room for its functions' suffixes.
pub(crate) fn check_solver_name(name: &str) -> Result<()> {
    check_identifier(name, "solver")?;
    if name.len() + SUFFIX_ROOM > MAX_NAME_LEN {
        return Err(Error::InvalidName {
            name: name.into(),
            reason: format!(
                "a solver's name may have at most {} characters (its functions add suffixes)",
                MAX_NAME_LEN - SUFFIX_ROOM
            ),
        });
    }
    Ok(())
}

/// The loaded solver in `slot`, compiling and loading `unit()` the first time.
pub(crate) fn load_once(
    slot: &Mutex<Option<Arc<JitSolver>>>,
    name: &str,
    dims: &Dims,
    compiler: &CompilerOptions,
    unit: impl FnOnce() -> Result<Unit>,
) -> Result<Arc<JitSolver>> {
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(jit) = slot.as_ref() {
        return Ok(jit.clone());
    }
    let path = jit::compile_unit(&unit()?, compiler)?;
    let jit = Arc::new(JitSolver::load(&path, name, dims.clone())?);
    *slot = Some(jit.clone());
    Ok(jit)
}

/// A new solution of the sizes `d`, filled by `solve_into`.
pub(crate) fn solve_to_new(d: &Dims, solve_into: impl FnOnce(SolutionMut) -> Result<Info>) -> Result<Solution> {
    let mut solution = Solution {
        x: vec![0.0; d.nx],
        lam_eq: vec![0.0; d.neq],
        lam_ineq: vec![0.0; d.nineq],
        lam_box: vec![0.0; d.nx],
        info: Info::unsolved(),
    };
    let out = SolutionMut {
        x: &mut solution.x,
        lam_eq: &mut solution.lam_eq,
        lam_ineq: &mut solution.lam_ineq,
        lam_box: &mut solution.lam_box,
    };
    solution.info = solve_into(out)?;
    Ok(solution)
}

/// Problem sizes.
#[derive(Clone, Debug)]
pub(crate) struct Dims {
    pub nx: usize,
    pub neq: usize,
    pub nineq: usize,
    pub param: Arg,
}

impl Dims {
    /// A multistage problem's sizes: the stacked stage variables, its rows, its parameter vector.
    pub(crate) fn multistage(problem: &super::MultistageProblem) -> Self {
        Dims { nx: problem.nvars(), neq: problem.neq(), nineq: problem.nineq(), param: Arg::new(problem.np()) }
    }
}

/// Checks the lengths of a solve's arguments against the solver's sizes; the error names the
/// argument.
pub(crate) fn check_lengths(
    name: &str,
    d: &Dims,
    x0: &[f64],
    p: &[f64],
    warm: &WarmStart,
    out: &SolutionMut,
) -> Result<()> {
    let check = |what: &str, got: usize, expected: usize| {
        if got == expected {
            return Ok(());
        }
        Err(Error::Problem {
            what: "solve",
            name: name.into(),
            message: format!("`{what}` has {got} entries, expected {expected}"),
        })
    };
    check("x0", x0.len(), d.nx)?;
    check("p", p.len(), d.param.numel())?;
    for (what, value, n) in
        [("lam_eq0", warm.lam_eq, d.neq), ("lam_ineq0", warm.lam_ineq, d.nineq), ("lam_box0", warm.lam_box, d.nx)]
    {
        if let Some(v) = value {
            check(what, v.len(), n)?;
        }
    }
    for (what, len, n) in [
        ("x", out.x.len(), d.nx),
        ("lam_eq", out.lam_eq.len(), d.neq),
        ("lam_ineq", out.lam_ineq.len(), d.nineq),
        ("lam_box", out.lam_box.len(), d.nx),
    ] {
        check(what, len, n)?;
    }
    Ok(())
}

type Call =
    unsafe extern "C" fn(*mut c_void, *const f64, *const f64, *const f64, *const f64, *const f64, *const f64, *mut f64);
type Get = unsafe extern "C" fn(*mut c_void, *mut f64);

/// A loaded native solver: its entry points and a pool of workspaces.
pub struct JitSolver {
    call: Call,
    get_x: Get,
    get_lam_eq: Get,
    get_lam_ineq: Get,
    get_lam_box: Get,
    dims: Dims,
    // Before the library: the workspaces are freed through it.
    pool: WorkspacePool,
    // Dropped last: the entry points live in it.
    library: Library,
}

impl JitSolver {
    pub(crate) fn load(path: &std::path::Path, name: &str, dims: Dims) -> Result<JitSolver> {
        let library = Library::load(path)?;
        let symbol = |what: &str| format!("jit_{name}_{what}");
        // SAFETY: the generated shim defines these symbols with exactly these signatures;
        // they are used only while `library` is alive (it is dropped last).
        unsafe {
            let what = format!("a workspace of the solver in `{}`", path.display());
            Ok(JitSolver {
                pool: WorkspacePool::new(&library, name, what, None)?,
                call: library.symbol(&symbol("call"))?,
                get_x: library.symbol(&symbol("get_x"))?,
                get_lam_eq: library.symbol(&symbol("get_lam_eq"))?,
                get_lam_ineq: library.symbol(&symbol("get_lam_ineq"))?,
                get_lam_box: library.symbol(&symbol("get_lam_box"))?,
                dims,
                library,
            })
        }
    }

    /// The library's path.
    pub fn path(&self) -> &std::path::Path {
        self.library.path()
    }

    /// Runs a solve; lengths were checked by the caller.
    pub(crate) fn solve(
        &self,
        x0: &[f64],
        p: &[f64],
        warm: &WarmStart,
        out: SolutionMut,
        settings: &[f64],
    ) -> Result<Info> {
        self.pool.with(|_| {}, |ws| self.solve_in(ws, x0, p, warm, out, settings))
    }

    /// [`solve`](Self::solve) in the workspace `ws`.
    fn solve_in(
        &self,
        ws: *mut c_void,
        x0: &[f64],
        p: &[f64],
        warm: &WarmStart,
        out: SolutionMut,
        scalars: &[f64],
    ) -> Info {
        let mut info = [0.0; INFO_LEN];
        let ptr = |v: Option<&[f64]>| v.map_or(std::ptr::null(), |s| s.as_ptr());
        let p_ptr = if p.is_empty() { std::ptr::null() } else { p.as_ptr() };
        let start = std::time::Instant::now();
        // SAFETY: every pointer is null (allowed where a size is zero or a warm start is
        // absent) or points to a slice of the size the solver was generated for (checked by
        // `SqpFunction::solve_into`); the workspace is this call's alone.
        unsafe {
            (self.call)(
                ws,
                x0.as_ptr(),
                p_ptr,
                ptr(warm.lam_eq),
                ptr(warm.lam_ineq),
                ptr(warm.lam_box),
                scalars.as_ptr(),
                info.as_mut_ptr(),
            );
        }
        let elapsed = start.elapsed().as_secs_f64();
        // SAFETY: each output slice has the length of what the getter writes.
        unsafe {
            (self.get_x)(ws, out.x.as_mut_ptr());
            (self.get_lam_eq)(ws, out.lam_eq.as_mut_ptr());
            (self.get_lam_ineq)(ws, out.lam_ineq.as_mut_ptr());
            (self.get_lam_box)(ws, out.lam_box.as_mut_ptr());
        }
        debug_assert_eq!(out.x.len(), self.dims.nx);
        Info::from_scalars(&info, elapsed)
    }
}

impl std::fmt::Debug for JitSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitSolver").field("path", &self.path()).finish_non_exhaustive()
    }
}

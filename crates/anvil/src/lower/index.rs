//! Index expressions: the integer arithmetic that movement ops turn into.
//!
//! An [`IndexExpr`] is kept in a canonical form, a sum of `coefficient × atom` terms plus a
//! constant, where an atom is a loop variable or a division/modulo of another expression.
//! Every constructor simplifies using the loop variables' ranges, so that a reshape followed
//! by its inverse folds back to the plain loop variable, and `(i*8 + j) / 8` becomes `i`.

use std::fmt;

/// Loop extents: variable `v` ranges over `0..extents[v]`.
pub type Extents = [usize];

/// An integer expression over loop variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexExpr {
    /// `coefficient × atom` terms, sorted by atom, no zero coefficients, no repeated atoms.
    terms: Vec<(Atom, i64)>,
    constant: i64,
}

/// A non-linear building block of an index expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    /// Loop variable `v`.
    Var(usize),
    /// Truncating division by a positive constant.
    Div(Box<IndexExpr>, i64),
    /// Remainder of division by a positive constant.
    Mod(Box<IndexExpr>, i64),
}

impl IndexExpr {
    /// The constant `c`.
    pub fn constant(c: i64) -> Self {
        IndexExpr { terms: Vec::new(), constant: c }
    }

    /// Loop variable `v`.
    pub fn var(v: usize) -> Self {
        IndexExpr { terms: vec![(Atom::Var(v), 1)], constant: 0 }
    }

    fn atom(atom: Atom) -> Self {
        IndexExpr { terms: vec![(atom, 1)], constant: 0 }
    }

    /// True if the expression is a sum of loop variables times constants (no division or
    /// remainder).
    pub fn is_affine(&self) -> bool {
        self.terms.iter().all(|(atom, _)| matches!(atom, Atom::Var(_)))
    }

    /// The value if the expression is constant.
    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// `self + other`.
    pub fn add(&self, other: &IndexExpr) -> IndexExpr {
        let mut terms = self.terms.clone();
        terms.extend(other.terms.iter().cloned());
        Self::normalized(terms, self.constant + other.constant)
    }

    /// `self + c`.
    pub fn add_const(&self, c: i64) -> IndexExpr {
        IndexExpr { terms: self.terms.clone(), constant: self.constant + c }
    }

    /// `self × c`.
    pub fn scale(&self, c: i64) -> IndexExpr {
        let terms = self.terms.iter().map(|(a, k)| (a.clone(), k * c)).collect();
        Self::normalized(terms, self.constant * c)
    }

    fn normalized(mut terms: Vec<(Atom, i64)>, mut constant: i64) -> IndexExpr {
        loop {
            terms.sort_by(|a, b| a.0.cmp(&b.0));
            let mut merged: Vec<(Atom, i64)> = Vec::with_capacity(terms.len());
            for (atom, k) in terms {
                match merged.last_mut() {
                    Some(last) if last.0 == atom => last.1 += k,
                    _ => merged.push((atom, k)),
                }
            }
            merged.retain(|(_, k)| *k != 0);
            // k·d·(e / d) + k·(e % d) is k·e (truncating division and remainder satisfy
            // d·(e / d) + e % d = e): a merge of axes read back in row-major order.
            let Some((first, second, e, k)) = Self::quotient_and_remainder(&merged) else {
                return IndexExpr { terms: merged, constant };
            };
            merged.remove(second);
            merged.remove(first);
            merged.extend(e.terms.iter().map(|(a, c)| (a.clone(), c * k)));
            constant += e.constant * k;
            terms = merged;
        }
    }

    /// Positions `(i, j)`, `i < j`, of terms `k·d·(e / d)` and `k·(e % d)`, with `e` and `k`.
    fn quotient_and_remainder(terms: &[(Atom, i64)]) -> Option<(usize, usize, IndexExpr, i64)> {
        for (i, (a, ka)) in terms.iter().enumerate() {
            let Atom::Div(e, d) = a else { continue };
            let paired = |(b, kb): &(Atom, i64)| matches!(b, Atom::Mod(f, g) if f == e && g == d) && kb * d == *ka;
            if let Some(j) = terms.iter().position(paired) {
                let (i, j) = (i.min(j), i.max(j));
                return Some((i, j, (**e).clone(), ka / d));
            }
        }
        None
    }

    /// The smallest and largest value over all loop variable values.
    pub fn bounds(&self, ext: &Extents) -> (i64, i64) {
        let ranges: Vec<(i64, i64)> = ext.iter().map(|&n| (0, n as i64 - 1)).collect();
        self.bounds_in(&ranges)
    }

    /// The smallest and largest value when variable `v` ranges over `ranges[v]` (inclusive).
    pub fn bounds_in(&self, ranges: &[(i64, i64)]) -> (i64, i64) {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (atom, k) in &self.terms {
            let (a, b) = atom.bounds_in(ranges);
            let (x, y) = (a * k, b * k);
            lo += x.min(y);
            hi += x.max(y);
        }
        (lo, hi)
    }

    /// `self / d` (truncating), simplified; `d > 0`.
    pub fn div(&self, d: i64, ext: &Extents) -> IndexExpr {
        if d == 1 {
            return self.clone();
        }
        if d <= 0 {
            // Only zero-size buffers have zero strides, and their loops never run.
            return IndexExpr::constant(0);
        }
        let (lo, hi) = self.bounds(ext);
        if lo >= 0 && hi < d {
            return IndexExpr::constant(0);
        }
        if lo >= 0 {
            // (q·d + r) / d = q + r / d when both sides are non-negative.
            let (quotient, rest) = self.split_multiples(d);
            if rest.bounds(ext).0 >= 0 && (!quotient.terms.is_empty() || quotient.constant != 0) {
                return quotient.add(&rest.div(d, ext));
            }
            if let [(Atom::Div(inner, d0), 1)] = self.terms.as_slice() {
                if self.constant == 0 {
                    return inner.div(d0 * d, ext);
                }
            }
        }
        IndexExpr::atom(Atom::Div(Box::new(self.clone()), d))
    }

    /// `self % d`, simplified; `d > 0`.
    pub fn modulo(&self, d: i64, ext: &Extents) -> IndexExpr {
        if d <= 1 {
            return IndexExpr::constant(0);
        }
        let (lo, hi) = self.bounds(ext);
        if lo >= 0 && hi < d {
            return self.clone();
        }
        if lo >= 0 {
            let (_, rest) = self.split_multiples(d);
            let (rlo, rhi) = rest.bounds(ext);
            if rlo >= 0 && rhi < d {
                return rest;
            }
            if rlo >= 0 && rest != *self {
                return rest.modulo(d, ext);
            }
        }
        IndexExpr::atom(Atom::Mod(Box::new(self.clone()), d))
    }

    /// Splits into `(q, r)` with `self = q·d + r`, where `q·d` collects the terms (and
    /// constant part) whose coefficients are multiples of `d`.
    fn split_multiples(&self, d: i64) -> (IndexExpr, IndexExpr) {
        let (mut q, mut r) = (Vec::new(), Vec::new());
        for (atom, k) in &self.terms {
            if k % d == 0 {
                q.push((atom.clone(), k / d));
            } else {
                r.push((atom.clone(), *k));
            }
        }
        let (qc, rc) = (self.constant.div_euclid(d), self.constant.rem_euclid(d));
        (IndexExpr::normalized(q, qc), IndexExpr::normalized(r, rc))
    }

    /// `(c, rest)` with `self = c·v + rest` and `rest` free of `v`, if `v` only appears as a
    /// plain term (not inside a division or modulo).
    pub fn split_var(&self, v: usize) -> Option<(i64, IndexExpr)> {
        let mut c = 0;
        let mut rest = Vec::new();
        for (atom, k) in &self.terms {
            match atom {
                Atom::Var(w) if *w == v => c = *k,
                Atom::Var(_) => rest.push((atom.clone(), *k)),
                Atom::Div(e, _) | Atom::Mod(e, _) => {
                    let mut vars = Vec::new();
                    e.vars(&mut vars);
                    if vars.contains(&v) {
                        return None;
                    }
                    rest.push((atom.clone(), *k));
                }
            }
        }
        Some((c, IndexExpr { terms: rest, constant: self.constant }))
    }

    /// The value at the point where loop variable `v` is `point[v]` (division and remainder
    /// truncate, as in the C++ it is rendered to).
    pub fn eval(&self, point: &[i64]) -> i64 {
        let atom = |a: &Atom| match a {
            Atom::Var(v) => point[*v],
            Atom::Div(e, d) => e.eval(point) / d,
            Atom::Mod(e, d) => e.eval(point) % d,
        };
        self.terms.iter().map(|(a, k)| atom(a) * k).sum::<i64>() + self.constant
    }

    /// The loop variables the expression depends on.
    pub fn vars(&self, out: &mut Vec<usize>) {
        for (atom, _) in &self.terms {
            match atom {
                Atom::Var(v) => out.push(*v),
                Atom::Div(e, _) | Atom::Mod(e, _) => e.vars(out),
            }
        }
    }

    /// The multi-index of the current point of a loop nest over `shape`: loop variable `d`
    /// along axis `d`, except that axes of extent 1 need no loop (their index is 0).
    pub fn loop_point(shape: &[usize]) -> Vec<IndexExpr> {
        let axis = |(d, &n): (usize, &usize)| if n == 1 { IndexExpr::constant(0) } else { IndexExpr::var(d) };
        shape.iter().enumerate().map(axis).collect()
    }

    /// Row-major linear index of `index` into a buffer of shape `shape`.
    pub fn linearize(index: &[IndexExpr], shape: &[usize]) -> IndexExpr {
        let mut lin = IndexExpr::constant(0);
        let mut stride = 1i64;
        for (i, &n) in index.iter().zip(shape).rev() {
            if n != 1 {
                lin = lin.add(&i.scale(stride));
            }
            stride *= n as i64;
        }
        lin
    }

    /// The multi-index into `shape` of the row-major linear index `lin`.
    pub fn delinearize(lin: &IndexExpr, shape: &[usize], ext: &Extents) -> Vec<IndexExpr> {
        let strides = crate::shape::strides(shape);
        shape
            .iter()
            .zip(strides)
            .enumerate()
            .map(|(d, (&n, stride))| {
                if n == 1 {
                    return IndexExpr::constant(0);
                }
                let q = lin.div(stride as i64, ext);
                if d == 0 {
                    q
                } else {
                    q.modulo(n as i64, ext)
                }
            })
            .collect()
    }
}

impl Atom {
    fn bounds_in(&self, ranges: &[(i64, i64)]) -> (i64, i64) {
        match self {
            Atom::Var(v) => ranges[*v],
            Atom::Div(e, d) => {
                let (lo, hi) = e.bounds_in(ranges);
                (lo / d, hi / d)
            }
            Atom::Mod(e, d) => {
                let (lo, hi) = e.bounds_in(ranges);
                if lo >= 0 {
                    (0, hi.min(d - 1))
                } else {
                    (-(d - 1), d - 1)
                }
            }
        }
    }
}

/// How a target writes index arithmetic (a renderer spells it with its dialect, see
/// [`IndexExpr::spell`]); the expression's [`Display`](fmt::Display) is the C-like form.
pub trait IndexSpelling {
    /// Loop variable `v`.
    fn var(&self, v: usize) -> String;
    /// `x` times `k` (`k` > 1).
    fn product(&self, x: &str, k: u64) -> String;
    /// `x` divided by `d`, truncating.
    fn quotient(&self, x: &str, d: i64) -> String;
    /// The remainder of `x` divided by `d`.
    fn remainder(&self, x: &str, d: i64) -> String;
    /// `x + y`, or with `negative`, `x - y`.
    fn sum(&self, x: &str, y: &str, negative: bool) -> String;
    /// `-x`.
    fn negative(&self, x: &str) -> String;
}

impl IndexExpr {
    /// The expression written as `spelling` says.
    pub fn spell(&self, spelling: &impl IndexSpelling) -> String {
        let mut out: Option<String> = None;
        for (atom, k) in &self.terms {
            let atom = match atom {
                Atom::Var(v) => spelling.var(*v),
                Atom::Div(e, d) => spelling.quotient(&e.spell(spelling), *d),
                Atom::Mod(e, d) => spelling.remainder(&e.spell(spelling), *d),
            };
            let term = match k.unsigned_abs() {
                1 => atom,
                m => spelling.product(&atom, m),
            };
            out = Some(match out {
                None if *k < 0 => spelling.negative(&term),
                None => term,
                Some(sum) => spelling.sum(&sum, &term, *k < 0),
            });
        }
        match (out, self.constant) {
            (None, c) => c.to_string(),
            (Some(sum), 0) => sum,
            (Some(sum), c) => spelling.sum(&sum, &c.unsigned_abs().to_string(), c < 0),
        }
    }
}

/// The C-like form of index expressions, loop variables named `i<v>`.
struct CLike;

impl IndexSpelling for CLike {
    fn var(&self, v: usize) -> String {
        format!("i{v}")
    }
    fn product(&self, x: &str, k: u64) -> String {
        format!("{x}*{k}")
    }
    fn quotient(&self, x: &str, d: i64) -> String {
        format!("({x})/{d}")
    }
    fn remainder(&self, x: &str, d: i64) -> String {
        format!("({x})%{d}")
    }
    fn sum(&self, x: &str, y: &str, negative: bool) -> String {
        format!("{x} {} {y}", if negative { '-' } else { '+' })
    }
    fn negative(&self, x: &str) -> String {
        format!("-{x}")
    }
}

/// The C-like form, loop variables named `i<v>` (as in messages and the generated C++).
impl fmt::Display for IndexExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spell(&CLike))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_round_trip_folds_to_the_variables() {
        let ext = [3, 4, 5];
        let idx = [IndexExpr::var(0), IndexExpr::var(1), IndexExpr::var(2)];
        let lin = IndexExpr::linearize(&idx, &[3, 4, 5]);
        let back = IndexExpr::delinearize(&lin, &[12, 5], &ext);
        assert_eq!(back[0].to_string(), "i0*4 + i1");
        assert_eq!(back[1], IndexExpr::var(2));
        let again = IndexExpr::delinearize(&IndexExpr::linearize(&back, &[12, 5]), &[3, 4, 5], &ext);
        assert_eq!(again, idx.to_vec());
    }

    #[test]
    fn division_keeps_what_it_cannot_prove() {
        let ext = [10];
        let e = IndexExpr::var(0).div(3, &ext);
        assert_eq!(e.to_string(), "(i0)/3");
        assert_eq!(e.bounds(&ext), (0, 3));
        assert_eq!(IndexExpr::var(0).modulo(16, &ext), IndexExpr::var(0));
        assert_eq!((0..10).map(|i| e.eval(&[i])).collect::<Vec<_>>(), [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
    }

    #[test]
    fn like_terms_merge_and_cancel() {
        let a = IndexExpr::var(0).scale(2).add_const(3);
        let b = IndexExpr::var(0).scale(-2);
        assert_eq!(a.add(&b), IndexExpr::constant(3));
    }

    #[test]
    fn a_merge_of_axes_read_back_in_order_is_the_linear_index() {
        // flatten of a (1000, 2) buffer read at i0 + 1: (i0 + 1)/2·2 + (i0 + 1)%2 = i0 + 1,
        // with negative values too (truncating division and remainder).
        let ext = [1999];
        let q = IndexExpr::var(0).add_const(1);
        let rows = IndexExpr::delinearize(&q, &[1000, 2], &ext);
        assert!(!rows[0].is_affine() && !rows[1].is_affine());
        assert_eq!(IndexExpr::linearize(&rows, &[1000, 2]), q);
        let shifted = IndexExpr::var(0).add_const(-5);
        let (div, rem) = (shifted.div(3, &[4]), shifted.modulo(3, &[4]));
        let sum = div.scale(6).add(&rem.scale(2));
        assert_eq!(sum, shifted.scale(2));
        assert!((0..4).all(|i| sum.eval(&[i]) == 2 * (i - 5)));
        // Unpaired terms stay.
        assert!(!div.scale(3).add(&rem.scale(2)).is_affine());
    }
}

// Symmetric indefinite LDL' of a KKT matrix with stage structure, and its inertia.
//
// A multistage problem orders its unknowns by stage: stage k owns its variables z_k and the
// constraint rows that act on z_k alone or that couple z_{k-1} with z_k (the dynamics that
// define x_k). Every entry then lies in a stage's own block or couples a stage's own unknowns
// with the previous stage's variables (its "link"), so the matrix is block tridiagonal and
// eliminating stage by stage, from the last to the first, fills only the link block: each
// stage is a dense front of its own unknowns (fully summed) and its link (updated).
//
// Inside a front the pivots are chosen for stability, as a multifrontal solver does
// (front.hpp: threshold pivoting, the threshold rising from 1e-6 while solves are
// inaccurate); own unknowns that no stable pivot can eliminate are delayed to the previous
// stage's front (where more of their entries are summed). This
// is what makes terminal and point constraints work: rows that pin a state the dynamics
// already fix cannot be pivoted in their own stage, but can one or more stages earlier,
// where the controls reach them. The first stage pivots what is left, by Bunch and
// Kaufman's rule; a pivot that is cancellation's roundoff (at most zero_pivot times the
// absolute terms it was computed from: dense_ldl.hpp) counts as a zero eigenvalue.
//
// The inertia is the sum of the pivots' (Sylvester's law), which the interior-point method's
// inertia correction needs; a Riccati recursion over states and controls is the special case
// in which every front pairs the dynamics rows with the states they define. The caller
// assembles each stage straight into its front as the elimination reaches it, and solves
// refine against the caller's product with the matrix (its blocks: no copy of the matrix is
// kept here).
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>

// Stages stages, each with at most Own own unknowns (its first Link of them the variables
// the next stage links to), at most MaxDelay unknowns delayed into a front, Size unknowns in
// all (the right-hand side's length); most of them "usual", with the front UsualPattern
// describes (compiled_front.hpp: its own unknowns and its link, nothing delayed), which is
// factorised by code compiled for its nonzeros.
template <int Stages, int Own, int Link, int MaxDelay, int Size, class UsualPattern = NoCompiledFront>
class StageLdl {
 public:
  static constexpr int kFront = Own + MaxDelay + Link;

  // Each stage's own unknowns (count, and their positions in the right-hand side), set once.
  int count[Stages];
  int index[Stages * Own];

  // Where the caller's assembly writes stage k's entries: straight into its front, as
  // factorize() reaches the stage (own unknowns r, c < count[k]; c of the link: the previous
  // stage's own unknown c). Entries add up.
  class Entries {
   public:
    // Own entry (r, c) and (c, r), r >= c.
    void add_lower(int r, int c, double v) { f_[c * n_ + r] += v; }
    // The entry between own unknown r and the link's c.
    void add_link(int r, int c, double v) { f_[r * n_ + link_ + c] += v; }

   private:
    friend class StageLdl;
    Entries(double* f, int n, int link) : f_(f), n_(n), link_(link) {}
    double* f_;
    int n_, link_;
  };

  // With `stop_when_wrong`, stops at the first stage whose pivots prove the inertia wrong
  // (the factors are then unusable; the inertia reported counts every unknown not yet
  // pivoted as negative, so it is wrong too). A stage that neither receives nor delays
  // unknowns pivots its own block [S B'; B C]: S its variables' (the later stages' Schur
  // complement added), B and C its rows' (untouched by later stages: their links are this
  // stage's variables), C <= 0 (the interior-point method's row diagonals). Such a block has
  // at least as many negative eigenvalues as rows unless it is singular, so with no zero
  // pivot a stage with more is one no later stage can make up for: the matrix has more
  // negative eigenvalues than it has rows (a Riccati recursion's indefinite reduced Hessian).
  //
  // `assemble(k, entries)` adds stage k's entries (Entries), from the last stage on, as the
  // elimination reaches each: a factorisation that stops early assembles no more than it
  // eliminates, and no copy of the matrix is kept (solve() asks for its products instead).
  template <class Assemble>
  Inertia factorize(double zero_pivot, bool stop_when_wrong, Assemble assemble) {
    Inertia inertia{0, 0, 0};
    // (A diagonal's sum of terms starts with the later stage's, which reaches it first.)
    for (int i = 0; i < Size; ++i) row_size_[i] = terms_[i] = 0.0;
    int delayed = 0;
    for (int k = Stages - 1; k >= 0; --k) {
      const int negative_before = inertia.negative, received = delayed;
      delayed = factorize_stage(k, delayed, zero_pivot, &inertia, assemble);
      const bool own_block = received == 0 && delayed == 0;
      if (stop_when_wrong && own_block && inertia.zero == 0 && inertia.negative - negative_before > count[k] - Link) {
        for (int j = 0; j < k; ++j) inertia.negative += count[j];
        return inertia;
      }
    }
    return inertia;
  }

  // How many stages' fronts the last factorize() pivoted by the compiled code alone.
  int compiled_stages() const {
    int compiled = 0;
    for (int k = 0; k < Stages; ++k) compiled += usual_[k] != kByFront ? 1 : 0;
    return compiled;
  }

  // A stabler factorisation from the next factorize() on (PivotThreshold); false if the
  // threshold is at its largest already.
  bool increase_quality() { return threshold_.increase(); }
  // Back to the first threshold, and every stage to the in-place order first (a solve's
  // start, so that solving again takes the same steps).
  void reset_quality() {
    threshold_.reset();
    for (int k = 0; k < Stages; ++k) prefer_paired_[k] = false;
  }

  // Solves A x = b in place (b becomes x), refined against the matrix factorize() assembled:
  // `subtract_product(x, r)` makes r less A x, from the caller's blocks; returns the
  // residual ratio reached (refine()).
  template <class SubtractProduct>
  double solve(double* b, SubtractProduct subtract_product) {
    double size_b = 0.0, size_a = 0.0;
    for (int i = 0; i < Size; ++i) {
      rhs_[i] = x_[i] = b[i];
      size_b = max2(size_b, std::fabs(b[i]));
      size_a = max2(size_a, row_size_[i]);
    }
    substitute(x_);
    const double ratio = refine(
        Size, size_a, size_b, x_, r_,
        [&](const double* x, double* r) {
          for (int i = 0; i < Size; ++i) r[i] = rhs_[i];
          subtract_product(x, r);
        },
        [this](double* r) { substitute(r); });
    for (int i = 0; i < Size; ++i) b[i] = x_[i];
    return ratio;
  }

 private:
  // How a stage's front was pivoted: by Front, or by the compiled code (a usual front in
  // place or reordered, or one with unknowns delayed into it, which Front then
  // pivots or delays again).
  enum UsualPlan : char { kByFront, kCompiledInPlace, kCompiledPaired, kCompiledDelayed };
  // Each stage's front after factorize(): column-major, lower triangle: L below the diagonal
  // of its pivot columns, D on it, the Schur complement passed on in the trailing block. Its
  // leading dimension is its size, and the fronts are packed from the last stage's (at offset
  // 0) on: a long horizon's fronts take the memory their sizes need, not the largest possible
  // front's (the cart-pole's at N = 1000: 1.6 MB instead of 4.2, what the caches hold).
  double front_[Stages * kFront * kFront];
  int offset_[Stages];
  // Per front position: the unknown there (its position in b) and the pivot kind (1: 1x1,
  // 2: first column of a 2x2, 0: its second); per stage: front size and pivots.
  int unknown_[Stages * kFront];
  int block_[Stages * kFront];
  int size_[Stages], pivots_[Stages];
  // How stage k's front was pivoted (the substitutions follow).
  UsualPlan usual_[Stages];
  // Whether stage k's front goes reordered first (its last one was pivoted reordered, or
  // failed in place after changing the front).
  bool prefer_paired_[Stages] = {};
  double row_size_[Size > 0 ? Size : 1];
  // Per unknown, the sum of the absolute terms its diagonal was computed from so far.
  double terms_[Size > 0 ? Size : 1];
  double rhs_[Size > 0 ? Size : 1], x_[Size > 0 ? Size : 1], r_[Size > 0 ? Size : 1];
  double v_[kFront];
  // Scratch of assemble_front(): on the stack for stages of usual widths, here for wide ones
  // (whose scratch the stack may not hold).
  static constexpr bool kScratchOnStack = Own + Link <= 128;
  double own_scratch_[kScratchOnStack ? 1 : Own], link_scratch_[kScratchOnStack ? 1 : Link];
  PivotThreshold threshold_;

  double* front(int k) { return front_ + offset_[k]; }
  // Entry (i, j) of a front of size (and leading dimension) n.
  static double& at(double* f, int n, int i, int j) { return f[j * n + i]; }
  static double at(const double* f, int n, int i, int j) { return f[j * n + i]; }
  using StageFront = Front;
  // A usual stage's front compiled twice: its pivots in place, in order (most stages'), and
  // reordered with each variable's defining row right after it (where a variable without
  // curvature fails in place: a Riccati recursion's order). The second only where its code
  // is not too large: the COPS robot arm's (1,796 multiply-adds, against 1,099 in place;
  // its velocities have no curvature, so that nearly every front fails in place) takes its
  // module's compile time from 6 to 14 s with the bordered front below, and its solve from
  // 22.6 to 15.7 ms at N = 200.
  using UsualFront = CompiledFront<InPlace<UsualPattern>>;
  using PairedFront = CompiledFront<UsualPattern>;
  static constexpr long kMaxPairedWork = 2000;
  static constexpr bool kPaired =
      PairedFront::kCompiled && PairedFront::kReordered && PairedFront::kWork <= kMaxPairedWork;
  // A usual stage's front with unknowns delayed into it: the usual front's code in its
  // reordered plan where the module has that plan, else in place, with the delayed unknowns
  // as a border of any count (compiled_front.hpp), which Front then pivots or delays again.
  using BorderedFront = std::conditional_t<kPaired, PairedFront, UsualFront>;
  // A usual stage's own unknowns, if its front is compiled (its size is theirs and the link's).
  static constexpr int kUsualOwn = UsualFront::kCompiled && UsualFront::kSize == UsualFront::kPivots + Link
                                       ? UsualFront::kPivots
                                       : -1;
  static double max2(double u, double v) { return StageFront::max2(u, v); }
  // Calls f(m) with stage k's count of own unknowns m: a compile-time constant for a usual
  // stage (so that its short loops are unrolled: they were a fifth of a small stage's
  // factorisation), an int for the others.
  template <class F>
  void with_count(int k, F f) const {
    if constexpr (kUsualOwn > 0) {
      if (count[k] == kUsualOwn) return f(std::integral_constant<int, kUsualOwn>{});
    }
    f(count[k]);
  }

  // Assembles stage k's front: [own | delayed from stage k + 1 | link], the next stage's
  // Schur complement added; factorises it partially. Returns the unknowns it delays.
  template <class Assemble>
  int factorize_stage(int k, int delayed, double zero_pivot, Inertia* inertia, const Assemble& assemble) {
    int* unknown = unknown_ + k * kFront;
    const int m = count[k], link_size = k > 0 ? Link : 0;
    const int nf = m + delayed, n = nf + link_size;
    offset_[k] = k + 1 < Stages ? offset_[k + 1] + size_[k + 1] * size_[k + 1] : 0;
    size_[k] = n;
    assemble_front(k, delayed, assemble);
    // Its own diagonals' terms (the later stages' are summed already).
    double* f = front(k);
    for (int c = 0; c < m; ++c) terms_[index[k * Own + c]] += std::fabs(f[c * n + c]);
    const auto can_delay = [&](int left) {
      // Unless this is the first stage or the next front has no room for them.
      return link_size > 0 && left <= MaxDelay;
    };
    int* kinds = block_ + k * kFront;
    const double threshold = threshold_.value();
    // A usual stage's front goes as far as its compiled code goes (factorize_usual), and on
    // from there as any other.
    usual_[k] = kByFront;
    int first = 0;
    // (A pattern too large to compile instantiates none of its code.)
    if constexpr (kUsualOwn > 0) {
      if (m == kUsualOwn && link_size == Link && delayed == 0) first = factorize_usual(k, zero_pivot, inertia, assemble);
      if (m == kUsualOwn && link_size == Link && delayed > 0) {
        first = factorize_compiled<BorderedFront>(k, delayed, kCompiledDelayed, zero_pivot, inertia, assemble);
      }
    }
    // Front goes on from the compiled code's last pivot (the delayed unknowns: pivoted, or
    // delayed again).
    const int t = usual_[k] == kByFront || usual_[k] == kCompiledDelayed
                      ? StageFront(f, n, unknown, terms_, row_size_, threshold)
                            .factorize(nf, n, zero_pivot, kinds, inertia, can_delay, first)
                      : first;
    pivots_[k] = t;
    return nf - t;
  }

  // A usual stage's front by the compiled code: in place, or (where the module has the
  // reordered code) reordered where the last factorisation's front failed in place (most
  // stages keep their plan from one iteration to the next), the other plan where the first
  // fails before changing the front. Returns the positions pivoted in place from which
  // Front goes on (0: from the assembled front).
  template <class Assemble>
  int factorize_usual(int k, double zero_pivot, Inertia* inertia, const Assemble& assemble) {
    const auto in_place = [&] {
      return factorize_compiled<UsualFront>(k, 0, kCompiledInPlace, zero_pivot, inertia, assemble);
    };
    if constexpr (!kPaired) {
      return in_place();
    } else {
      const auto paired = [&] {
        const int done = factorize_compiled<PairedFront>(k, 0, kCompiledPaired, zero_pivot, inertia, assemble);
        prefer_paired_[k] = done == kUsualOwn;
        return done;
      };
      const bool paired_first = prefer_paired_[k];
      if (paired_first && paired() == kUsualOwn) return kUsualOwn;
      const int first = in_place();
      if (first == kUsualOwn) return first;
      // Failed after changing the front: Front goes on from there, the reordered plan next time.
      if (first > 0 || paired_first) {
        prefer_paired_[k] = first > 0;
        return first;
      }
      return paired();
    }
  }

  // Stage k's front (`delayed` unknowns received) by the compiled code Compiled: its own
  // unknowns all pivoted (the plan `plan` then), or the positions pivoted in place from which
  // Front goes on. Only a reordered plan may have to start again from the assembly (a pivot
  // failing after others): the sums of terms are kept for it then, and only then.
  template <class Compiled, class Assemble>
  int factorize_compiled(int k, int delayed, UsualPlan plan, double zero_pivot, Inertia* inertia,
                         [[maybe_unused]] const Assemble& assemble) {
    double* f = front(k);
    const int* unknown = unknown_ + k * kFront;
    int* kinds = block_ + k * kFront;
    [[maybe_unused]] const Inertia before = *inertia;
    // (The border's unknowns, when delayed ones are received, are between the pivots and the
    // link: the front's size is the pattern's and theirs.)
    [[maybe_unused]] const int size = Compiled::kSize + delayed;
    [[maybe_unused]] double kept[Compiled::kReordered ? kFront : 1];
    if constexpr (Compiled::kReordered) {
      for (int q = 0; q < size; ++q) kept[q] = terms_[unknown[q]];
    }
    const int done =
        delayed == 0
            ? Compiled::factorize(f, unknown, terms_, row_size_, threshold_.value(), zero_pivot, kinds, inertia)
            : Compiled::factorize_bordered(delayed, f, unknown, terms_, row_size_, threshold_.value(), zero_pivot,
                                           kinds, inertia);
    if (done == kUsualOwn) usual_[k] = plan;
    if constexpr (Compiled::kReordered) {
      if (done == Compiled::kAgain) {
        *inertia = before;
        for (int q = 0; q < size; ++q) terms_[unknown[q]] = kept[q];
        assemble_front(k, delayed, assemble);
        return 0;
      }
    }
    return done;
  }

  // Stage k's front (of size_[k] positions, `delayed` of them received): its own block and
  // the link's entries with it (the caller's assembly, straight into the front), and the next
  // stage's trailing block added.
  template <class Assemble>
  void assemble_front(int k, int delayed, const Assemble& assemble) {
    with_count(k, [&](auto m) {
      if (delayed == 0 && size_[k] == m + Link) {
        assemble_front(k, m, std::integral_constant<int, 0>{}, std::integral_constant<int, Link>{}, assemble);
      } else {
        assemble_front(k, m, delayed, size_[k] - m - delayed, assemble);
      }
    });
  }
  // (With m own unknowns, `delayed` received and `link_size` linked: compile-time constants
  // for a usual stage that receives nothing.)
  template <class Count, class Delayed, class LinkSize, class Assemble>
  void assemble_front(int k, Count m, Delayed delayed, LinkSize link_size, const Assemble& assemble) {
    int* unknown = unknown_ + k * kFront;
    const int nf = m + delayed, n = nf + link_size;
    double* f = front(k);
    // (The whole square, in one run: a fill per column, each a few entries, cost a quarter of
    // a small stage's factorisation.)
    for (int q = 0; q < n * n; ++q) f[q] = 0.0;
    Entries entries(f, n, nf);
    assemble(k, entries);
    // The rows' largest entries of the assembled matrix (what "zero" is relative to),
    // measured on the own columns: entry (r, c) of the own triangle is in rows r and c, the
    // next stage's link entries in the rows were measured when it was assembled, and the
    // link's columns' largest (the previous stage's rows') are passed on once.
    double rows_on_stack[kScratchOnStack ? Own : 1], links_on_stack[kScratchOnStack ? Link : 1];
    double* rows = kScratchOnStack ? rows_on_stack : own_scratch_;
    double* links = kScratchOnStack ? links_on_stack : link_scratch_;
    for (int r = 0; r < m; ++r) rows[r] = row_size_[index[k * Own + r]];
    for (int r = 0; r < link_size; ++r) links[r] = 0.0;
    for (int c = 0; c < m; ++c) {
      unknown[c] = index[k * Own + c];
      const double* column = f + c * n;
      double largest = rows[c];
      for (int r = c; r < m; ++r) {
        const double size = std::fabs(column[r]);
        largest = max2(largest, size);
        rows[r] = max2(rows[r], size);
      }
      for (int r = 0; r < link_size; ++r) {
        const double size = std::fabs(column[nf + r]);
        largest = max2(largest, size);
        links[r] = max2(links[r], size);
      }
      rows[c] = max2(rows[c], largest);
    }
    for (int r = 0; r < m; ++r) row_size_[index[k * Own + r]] = rows[r];
    for (int r = 0; r < link_size; ++r) {
      double& other = row_size_[index[(k - 1) * Own + r]];
      other = max2(other, links[r]);
    }
    for (int c = 0; c < link_size; ++c) unknown[nf + c] = index[(k - 1) * Own + c];
    if (k + 1 == Stages) return;
    // The next stage's trailing block: its delayed unknowns, then its link (our first Link).
    const double* g = front(k + 1);
    const int p = pivots_[k + 1], n1 = size_[k + 1], nf1 = n1 - Link;
    if (p == nf1) {
      // Nothing delayed: the trailing block is the link's alone, our first Link in order.
      for (int j = 0; j < Link; ++j) {
        const double* from = g + (nf1 + j) * n1 + nf1;
        double* to = f + j * n;
        for (int i = j; i < Link; ++i) to[i] += from[i];
      }
      return;
    }
    const auto place = [&](int q) { return q < nf1 ? m + (q - p) : q - nf1; };
    for (int q = p; q < nf1; ++q) unknown[place(q)] = unknown_[(k + 1) * kFront + q];
    for (int q2 = p; q2 < n1; ++q2) {
      for (int q1 = q2; q1 < n1; ++q1) {
        const int i = place(q1), j = place(q2);
        at(f, n, i > j ? i : j, i > j ? j : i) += at(g, n1, q1, q2);
      }
    }
  }

  // v <- A^-1 v with the factors: forwards through the stages in elimination order (L and
  // D), then backwards (L').
  void substitute(double* b) {
    for (int k = Stages - 1; k >= 0; --k) {
      const int* unknown = unknown_ + k * kFront;
      with_size(k, [&](auto n, auto) {
        for (int q = 0; q < n; ++q) v_[q] = b[unknown[q]];
        substitute_front(k, false);
        for (int q = 0; q < n; ++q) b[unknown[q]] = v_[q];
      });
    }
    for (int k = 0; k < Stages; ++k) {
      const int* unknown = unknown_ + k * kFront;
      with_size(k, [&](auto n, auto p) {
        for (int q = 0; q < n; ++q) v_[q] = b[unknown[q]];
        substitute_front(k, true);
        for (int q = 0; q < p; ++q) b[unknown[q]] = v_[q];
      });
    }
  }
  // Calls f(n, p) with stage k's front's size and pivots: compile-time constants for a usual
  // stage's front that nothing was delayed into or from, ints for the others.
  template <class F>
  void with_size(int k, F f) const {
    if constexpr (kUsualOwn > 0) {
      if (size_[k] == kUsualOwn + Link && pivots_[k] == kUsualOwn) {
        return f(std::integral_constant<int, kUsualOwn + Link>{}, std::integral_constant<int, kUsualOwn>{});
      }
    }
    f(size_[k], pivots_[k]);
  }
  // v_ <- stage k's front's forward ((L D)^-1) or backward (L'^-1) substitution, by the code
  // that pivoted it.
  void substitute_front(int k, bool backward) {
    const double* f = front(k);
    const auto by = [&](auto compiled) {
      using Compiled = decltype(compiled);
      backward ? Compiled::backward(f, v_) : Compiled::forward(f, v_);
    };
    if constexpr (kUsualOwn > 0) {
      if (usual_[k] == kCompiledInPlace) return by(UsualFront{});
    }
    if constexpr (kPaired) {
      if (usual_[k] == kCompiledPaired) return by(PairedFront{});
    }
    // Delayed unknowns' pivots (those Front took) after the compiled code's pivots.
    const int n = size_[k], compiled = usual_[k] == kCompiledDelayed ? kUsualOwn : 0;
    const int delayed = n - kUsualOwn - Link;
    const auto by_border = [&](bool now) {
      if constexpr (kUsualOwn > 0) {
        if (compiled > 0 && now) {
          backward ? BorderedFront::backward_bordered(delayed, f, v_) : BorderedFront::forward_bordered(delayed, f, v_);
        }
      }
    };
    by_border(!backward);
    if (backward) {
      StageFront::backward(f, n, block_ + k * kFront, pivots_[k], n, v_, compiled);
    } else {
      StageFront::forward(f, n, block_ + k * kFront, pivots_[k], n, v_, compiled);
    }
    by_border(backward);
  }
};


// Small helpers the interior-point runtime's parts share: included inside an anonymous
// namespace (internal linkage) by the module's code and by the method's (interior_point.cpp),
// so that code compiled with different flags never shares a definition. (Each part uses some
// of them: [[maybe_unused]] keeps clang's -Wunused-function quiet about the others.)
#ifndef ANVIL_IPM_COMMON_INCLUDED
#define ANVIL_IPM_COMMON_INCLUDED

// The length of an array that may be empty (C++ arrays may not).
[[maybe_unused]] constexpr int ipm_storage(int n) { return n > 0 ? n : 1; }

// max(a, b); a NaN argument gives the other.
[[maybe_unused]] inline double max_of(double a, double b) { return a > b || b != b ? a : b; }

[[maybe_unused]] inline bool all_finite(const double* v, int n) {
  // v - v is 0 for a finite v and NaN otherwise. An OR of comparisons over the whole array
  // vectorises; an early return per entry does not (7x slower on a long horizon's Hessian).
  int not_finite = 0;
  for (int i = 0; i < n; ++i) not_finite |= (v[i] - v[i]) != 0.0;
  return not_finite == 0;
}

#endif  // ANVIL_IPM_COMMON_INCLUDED

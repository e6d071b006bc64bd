#!/usr/bin/env bash
# Derives, mechanically, the identifiers that cannot name a C++ namespace at global scope
# after the headers anvil's generated modules include (<cstddef> <cstdint> <cstdlib>
# <cstring> <cmath>, and a solver's <cstdio> <limits>), for g++ and clang++ in -std=c++17 and -std=gnu++17: the names a
# NumericalFunction, module or CodegenIntConstant may not take.
#
# Candidates are every identifier of the preprocessed headers, every macro, and every
# libc/libm export; each is tried as `namespace NAME {}`, `namespace NAME { void call(); }`
# and `NAME::call()`, first in batches (diagnostics attributed by line), then alone to
# confirm. Function-like macros are added too (they break `NAME(`).
#
# Usage: scripts/find_reserved_names.sh        (about 7 minutes on two cores)
# then copy $OUTDIR/reserved_strict.txt to crates/anvil/src/render/reserved_names.txt.
# Re-run when a generated module includes another header, or for another libc/compiler.
#
# Outputs in $OUTDIR (default: a new temporary directory, printed at the end):
#   reserved_strict.txt                the list anvil uses (union of all modes + macros)
#   reserved_names.txt                 conflicts found by compiling + object-like macros
#   reserved_<compiler>_<mode>.txt     per-mode lists
#   funclike_macros.txt                function-like macros
#   candidates.txt, details.tsv        what was tested, and why each name is listed
set -euo pipefail
OUTDIR="${OUTDIR:-$(mktemp -d)}"
echo "find_reserved_names: writing to $OUTDIR" >&2
WORK="$OUTDIR/work"
rm -rf "$WORK"; mkdir -p "$WORK"
export OUTDIR WORK
exec python3 - "$@" <<'PYEOF'
import os, re, subprocess, sys, time, itertools
from concurrent.futures import ThreadPoolExecutor

OUT = os.environ["OUTDIR"]; WORK = os.environ["WORK"]
T0 = time.time()
HEADERS = ["cstddef", "cstdint", "cstdlib", "cstring", "cmath", "cstdio", "limits"]
HDR = "".join(f"#include <{h}>\n" for h in HEADERS)
MODES = [("gxx", "c++17", ["g++", "-std=c++17"]),
         ("gxx", "gnu++17", ["g++", "-std=gnu++17"]),
         ("clangxx", "c++17", ["clang++", "-std=c++17"]),
         ("clangxx", "gnu++17", ["clang++", "-std=gnu++17"])]
def noerrlimit(cmd): return ["-fmax-errors=0"] if cmd[0] == "g++" else ["-ferror-limit=0"]
NJOBS = max(2, os.cpu_count() or 2)

def run(cmd, inp=None):
    return subprocess.run(cmd, input=inp, capture_output=True, text=True)

ID_RE = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch
char char8_t char16_t char32_t class compl concept const consteval constexpr constinit
const_cast continue co_await co_return co_yield decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int
long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
protected public register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch template this thread_local throw true try typedef
typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split())

def reserved_anyway(n):
    return "__" in n or n.startswith("_") or n in KEYWORDS

# ---------------------------------------------------------------- a. candidates
cands = set()
macros = {}      # mode-key -> {name: is_function_like}
for comp, mode, cmd in MODES:
    key = f"{comp}_{mode}"
    r = run(cmd + ["-E", "-P", "-x", "c++", "-"], HDR)
    assert r.returncode == 0, r.stderr
    # strip string/char literals so their words are not taken as identifiers
    txt = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', " ", r.stdout)
    cands |= set(ID_RE.findall(txt))
    r = run(cmd + ["-dM", "-E", "-x", "c++", "-"], HDR)
    assert r.returncode == 0, r.stderr
    m = {}
    for line in r.stdout.splitlines():
        mm = re.match(r"#define\s+([A-Za-z_][A-Za-z0-9_]*)(\()?", line)
        if mm: m[mm.group(1)] = bool(mm.group(2))
    macros[key] = m
    cands |= set(m)
for lib in ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6"]:
    r = run(["nm", "-D", "--defined-only", lib])
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts:
            cands.add(parts[-1].split("@")[0])
raw_count = len(cands)
cands = sorted(c for c in cands if ID_RE.fullmatch(c) and not reserved_anyway(c))
with open(f"{OUT}/candidates.txt", "w") as f: f.write("\n".join(cands) + "\n")
print(f"[a/b] raw identifiers {raw_count}, candidates after filtering {len(cands)}", file=sys.stderr)

# ---------------------------------------------------------------- c. probing
def tu(names, pre=HDR):
    """TU: headers, then for each name (one per line) the bare namespace, then the
    namespace with a declaration, then a use inside a function.  Returns (source,
    {line: name})."""
    lines = pre.rstrip("\n").split("\n")
    owner = {}
    for n in names:
        lines.append(f"namespace {n} {{ }}"); owner[len(lines)] = n
    for n in names:
        lines.append(f"namespace {n} {{ void call(); }}"); owner[len(lines)] = n
    lines.append("void anvil_probe_use_function() {")
    for n in names:
        lines.append(f"  {n}::call();"); owner[len(lines)] = n
    lines.append("}")
    return "\n".join(lines) + "\n", owner

LOC_RE = re.compile(r"^probe\.cpp:(\d+):")
def compile_batch(cmd, names, tag, pch=None):
    src, owner = tu(names, HDR if pch is None else f'#include "{pch[0]}"\n')
    d = os.path.join(WORK, tag); os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "probe.cpp")
    with open(p, "w") as f: f.write(src)
    extra = [] if pch is None else pch[1]
    r = subprocess.run(cmd + ["-fsyntax-only", "-w"] + noerrlimit(cmd) + extra + ["probe.cpp"],
                       cwd=d, capture_output=True, text=True)
    hit = set()
    for line in r.stderr.splitlines():
        m = LOC_RE.match(line.strip())
        if m and int(m.group(1)) in owner: hit.add(owner[int(m.group(1))])
    return r.returncode, hit, r.stderr

def make_pch(comp, mode, cmd):
    d = os.path.join(WORK, f"pch_{comp}_{mode}"); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "anvilhdr.h"), "w") as f: f.write(HDR)
    if cmd[0] == "g++":
        r = run(cmd + ["-x", "c++-header", os.path.join(d, "anvilhdr.h"), "-o", os.path.join(d, "anvilhdr.h.gch")])
        assert r.returncode == 0, r.stderr
        return (os.path.join(d, "anvilhdr.h"), ["-Winvalid-pch"])
    r = run(cmd + ["-x", "c++-header", os.path.join(d, "anvilhdr.h"), "-o", os.path.join(d, "anvilhdr.pch")])
    assert r.returncode == 0, r.stderr
    return (os.path.join(d, "anvilhdr.h"), ["-include-pch", os.path.join(d, "anvilhdr.pch")])

def single_conflicts(cmd, name, tag, pch):
    rc, _, _ = compile_batch(cmd, [name], tag, pch)
    return rc != 0

def bisect_clean(cmd, names, tag):
    """names compiled together fail although no line was attributed: find culprits."""
    rc, hit, _ = compile_batch(cmd, names, tag)
    if rc == 0: return set()
    if len(names) == 1: return set(names)
    h = len(names) // 2
    return bisect_clean(cmd, names[:h], tag + "a") | bisect_clean(cmd, names[h:], tag + "b")

results = {}; details = []
for comp, mode, cmd in MODES:
    key = f"{comp}_{mode}"; t = time.time()
    # 1) batch compile of all candidates (no PCH), attribute diagnostics by line
    chunks = [cands[i::NJOBS] for i in range(NJOBS)]
    with ThreadPoolExecutor(NJOBS) as ex:
        outs = list(ex.map(lambda ic: compile_batch(cmd, ic[1], f"{key}_batch{ic[0]}"), enumerate(chunks)))
    flagged = set().union(*(o[1] for o in outs))
    for o in outs:
        if o[0] != 0 and not o[1]: raise SystemExit(f"{key}: batch failed without attribution:\n{o[2][:2000]}")
    # 2) the unflagged rest must compile cleanly together; otherwise bisect it
    rest = [c for c in cands if c not in flagged]
    rc, hit, err = compile_batch(cmd, rest, f"{key}_rest")
    extra = set()
    if rc != 0:
        extra = bisect_clean(cmd, rest, f"{key}_bis")
        print(f"  {key}: {len(extra)} conflicts found only by bisection: {sorted(extra)}", file=sys.stderr)
    # 3) exact check: each flagged name individually (with a PCH of the headers)
    pch = make_pch(comp, mode, cmd)
    sus = sorted(flagged | extra)
    with ThreadPoolExecutor(NJOBS) as ex:
        verdict = list(ex.map(lambda ni: single_conflicts(cmd, ni[1], f"{key}_one{ni[0] % NJOBS}", pch), enumerate(sus)))
    confirmed = {n for n, v in zip(sus, verdict) if v}
    # sanity: the PCH route must agree with the no-PCH route for a known name
    assert single_conflicts(cmd, "sin", f"{key}_sanity", pch)
    falsepos = sorted(set(sus) - confirmed)
    # 4) macros: object-like macros are conflicts by definition; function-like recorded apart
    objm = {n for n, fl in macros[key].items() if not fl and not reserved_anyway(n)}
    funm = {n for n, fl in macros[key].items() if fl and not reserved_anyway(n)}
    final = confirmed | objm
    results[key] = (final, funm)
    for n in sorted(final):
        why = []
        if n in confirmed: why.append("compile-error")
        if n in objm: why.append("object-macro")
        details.append(f"{n}\t{key}\t{'+'.join(why)}")
    for n in sorted(funm - final): details.append(f"{n}\t{key}\tfunction-macro(no-error)")
    with open(f"{OUT}/reserved_{key}.txt", "w") as f: f.write("\n".join(sorted(final)) + "\n")
    print(f"[c] {key}: batch-flagged {len(flagged)}, bisect-extra {len(extra)}, confirmed {len(confirmed)}, "
          f"unconfirmed(cascade) {len(falsepos)}{' e.g. '+str(falsepos[:8]) if falsepos else ''}, "
          f"object-macros {len(objm)} (without compile error: {len(objm - confirmed)}), "
          f"function-macros {len(funm)}, final {len(final)}  [{time.time()-t:.1f}s]", file=sys.stderr)

union = sorted(set().union(*(v[0] for v in results.values())))
funion = sorted(set().union(*(v[1] for v in results.values())) - set(union))
with open(f"{OUT}/reserved_names.txt", "w") as f: f.write("\n".join(union) + "\n")
with open(f"{OUT}/funclike_macros.txt", "w") as f: f.write("\n".join(funion) + "\n")
with open(f"{OUT}/reserved_strict.txt", "w") as f: f.write("\n".join(sorted(set(union) | set(funion))) + "\n")
with open(f"{OUT}/details.tsv", "w") as f: f.write("name\tmode\treason\n" + "\n".join(details) + "\n")
inter = sorted(set.intersection(*(v[0] for v in results.values())))
print(f"[d] union {len(union)} names, in all four modes {len(inter)}, function-like macros only {len(funion)}; "
      f"total {time.time()-T0:.1f}s", file=sys.stderr)
PYEOF

#!/bin/bash
# Static estimates (llvm-mca, not timings) of the aarch64 conversion loops: the explicit NEON
# kernels (`Simd::Neon`, tensor/src/convert/neon/) against the baseline's auto-vectorized loops
# (baseline.rs as the compiler makes it for aarch64, inlined into the row driver), sampling and
# finish apart, in cycles per 16 output pixels of 1920x1080 -> 640x640 letterbox (content 640x360:
# luma 3x, NV12 chroma 1.5x); and PIL's passes (`bilinear-antialias`) per 16 outputs of one
# member: horizontal, NEON's 2^-22 blocks against its whole weights tap by tap; vertical, over the
# f32 ring (i32 sums) against over the byte ring (u16 sums of whole weights); YUY2's row packing
# per 64 bytes of a row, a pass per group against one pass split for both.
#
# How: the crate's aarch64 assembly (one codegen unit, v0 symbol names so each NEON kernel variant
# is its own demangled symbol); a loop is a backward branch, the innermost ones are kept. NEON
# loops are found by symbol (`sample_blocks::<P, M, SINGLE, TWO>`, `finish_rows::<S, KIND, CS,
# OUT>`), baseline loops inside `driver::rows` by the baseline.rs line their body carries (.loc)
# plus an instruction filter, the most unrolled one where several match. Each loop body goes through
# llvm-mca (-iterations=200) for cycles per iteration; the bytes it stores per iteration
# (vector stores, st3/st4, scalar stores; stack spills left out) scale that to the bytes the loop
# writes per 16 output pixels in the case. llvm-mca assumes every load hits L1 and every branch
# is predicted; it says nothing about memory bandwidth, cache misses or prefetching.
#
# Needs: the aarch64 Rust target, llvm (llvm-mca, llvm-cxxfilt: scripts/deps.sh --aarch64).
# Usage: scripts/neon-mca.sh [cpu ...]   (default: cortex-a53 cortex-a55 neoverse-n1 cortex-a76)
# LLVM (14 to 19) has no Cortex-A76 model: -mcpu=cortex-a76 (and a78) schedule with the Cortex-A57
# model. Neoverse N1 is the A76's core in server form (LLVM 16 on models it), so it stands for the
# A76/A78 class; the cortex-a76 column is kept to show what the A57 model says.
set -euo pipefail
cd "$(dirname "$0")/.."
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(cortex-a53 cortex-a55 neoverse-n1 cortex-a76)
pick() { for c in "$@"; do command -v "$c" >/dev/null && { command -v "$c"; return; }; done; echo "neon-mca: none of $* found (scripts/deps.sh --aarch64)" >&2; exit 1; }
mca=$(pick llvm-mca-19 llvm-mca-18 llvm-mca-17 llvm-mca-16 llvm-mca)
filt=$(pick llvm-cxxfilt-19 llvm-cxxfilt-18 llvm-cxxfilt-17 llvm-cxxfilt-16 llvm-cxxfilt)
out=target/mca
deps=$out/aarch64-unknown-linux-gnu/release/deps
# The assembly is a side output cargo does not track: rebuild the crate so it is there and current.
CARGO_TARGET_DIR=$out cargo clean -q --release -p edgefirst-tensor --target aarch64-unknown-linux-gnu
CARGO_TARGET_DIR=$out cargo rustc -q --release -p edgefirst-tensor --target aarch64-unknown-linux-gnu --lib -- \
  --emit asm -C codegen-units=1 -C symbol-mangling-version=v0
asm=$(ls -t "$deps"/edgefirst_tensor-*.s | head -1)
python3 - "$asm" "$mca" "$filt" "$out/loops" "${cpus[@]}" <<'PY'
import os, re, subprocess, sys

asm, mca, filt, loop_dir, cpus = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
BASELINE = 'tensor/src/convert/baseline.rs'
os.makedirs(loop_dir, exist_ok=True)

def parse(path):
    """Functions of the assembly: name, then (kind, text, (file, line)) items."""
    files, funcs, cur, loc = {}, [], None, None
    for raw in open(path):
        line = raw.rstrip('\n')
        m = re.match(r'^\s+\.file\s+(\d+)\s+"[^"]*"\s+"([^"]*)"', line)
        if m:
            files[m.group(1)] = m.group(2)
            continue
        m = re.match(r'^(_R\w+):', line)
        if m:
            cur, loc = {'sym': m.group(1), 'items': []}, None
            funcs.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r'^\s+\.loc\s+(\d+)\s+(\d+)', line)
        if m:
            loc = (files.get(m.group(1), '?'), int(m.group(2)))
            continue
        m = re.match(r'^(\.L\w+):', line)
        if m:
            cur['items'].append(('label', m.group(1), loc))
            continue
        text = line.split('//')[0].strip()
        if text and not text.startswith('.') and line[:1] in ('\t', ' '):
            cur['items'].append(('ins', text, loc))
    names = subprocess.run([filt], input='\n'.join(f['sym'] for f in funcs), capture_output=True,
                           text=True, check=True).stdout.split('\n')
    for f, n in zip(funcs, names):
        f['name'] = n
    return funcs

BRANCH = re.compile(r'^(b|b\.\w+|cbz|cbnz|tbz|tbnz)\s+(.*)$')

def inner_loops(f):
    items, at, spans = f['items'], {}, []
    for i, (kind, text, _) in enumerate(items):
        if kind == 'label':
            at[text] = i
        else:
            m = BRANCH.match(text)
            target = m and m.group(2).split(',')[-1].strip()
            if target in at:
                spans.append((at[target], i))
    inner = [s for s in spans if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]
    return [[it for it in items[a:b + 1] if it[0] == 'ins'] for a, b in inner]

SIZE = {'q': 16, 'd': 8, 's': 4, 'w': 4, 'x': 8, 'h': 2, 'b': 1}

def stored(body):
    """Bytes one iteration stores (not counting stack spills)."""
    n = 0
    for _, t, _ in body:
        op = t.split()[0]
        if not op.startswith('st') or '[sp' in t:
            continue
        m = re.match(r'st([1-4])\s+\{([^}]*)\}(\[\d+\])?', t)
        if m:
            regs = [r.strip() for r in m.group(2).split(',') if r.strip()]
            lanes = regs[0].split('.')[1]
            if m.group(3):
                n += SIZE[lanes[-1]] * len(regs)
            else:
                n += (16 if lanes in ('16b', '8h', '4s', '2d') else 8) * len(regs)
            continue
        if op in ('strb', 'sturb'):
            n += 1
            continue
        if op in ('strh', 'sturh'):
            n += 2
            continue
        reg = re.match(r'\w+\s+([qdswx])', t)
        if reg:
            n += SIZE[reg.group(1)] * (2 if op.startswith('stp') else 1)
    return n

def source_line(snippet):
    for i, l in enumerate(open(BASELINE), 1):
        if snippet in l:
            return i
    sys.exit(f'neon-mca: "{snippet}" not in {BASELINE}')

def nested_loops(f, repeat):
    """Loops whose body holds inner loops that store nothing (a loop over tap pairs of a runtime
    count inside the block loop), the inner bodies repeated `repeat` times: one block's
    instructions."""
    items, at, spans = f['items'], {}, []
    for i, (kind, text, _) in enumerate(items):
        if kind == 'label':
            at[text] = i
        else:
            m = BRANCH.match(text)
            target = m and m.group(2).split(',')[-1].strip()
            if target in at:
                spans.append((at[target], i))
    body = lambda a, b: [it for it in items[a:b + 1] if it[0] == 'ins']
    found = []
    for a, b in spans:
        inner = [s for s in spans if s != (a, b) and a <= s[0] and s[1] <= b]
        if not inner or any(stored(body(*s)) for s in inner):
            continue
        flat, i = [], a
        for s in sorted(inner):
            if s[0] < i:
                continue
            flat += body(i, s[0] - 1) + body(*s) * repeat
            i = s[1] + 1
        found.append(flat + body(i, b))
    return found

def choose(funcs, where, need, want=(), avoid=()):
    """The loop for one part of a case: `where` a symbol suffix (`nest:N:` before it: the block
    loop around a loop run N times, see `nested_loops`; `in:` before it: an inner loop of that
    function, inlined there) or a baseline.rs snippet."""
    if where.startswith('nest:'):
        _, times, name = where.split(':', 2)
        cands = [b for f in funcs if f['name'].endswith(name) for b in nested_loops(f, int(times))]
    elif where.startswith('in:'):
        cands = [b for f in funcs if f['name'].endswith(where[3:]) for b in inner_loops(f)]
    elif where.startswith('neon::'):
        cands = [b for f in funcs if f['name'].endswith(where) for b in inner_loops(f)]
    else:
        line = source_line(where)
        rows = [f for f in funcs if f['name'].endswith('convert::driver::rows')]
        cands = [b for f in rows for b in inner_loops(f) if any(l == (BASELINE, line) for *_, l in b)]
    ok = [b for b in cands if stored(b)
          and all(any(re.search(w, t) for _, t, _ in b) for w in want)
          and not any(re.search(a, t) for a in avoid for _, t, _ in b)]
    if not ok:
        sys.exit(f'neon-mca: no loop for {where} (want {want}, avoid {avoid})')
    return max(ok, key=lambda b: (stored(b) / len(b), -len(b))), need

def cycles(body, cpu, name):
    path = os.path.join(loop_dir, f'{name}.s')
    with open(path, 'w') as f:
        f.write('\n'.join(t for _, t, _ in body) + '\n')
    r = subprocess.run([mca, '-mtriple=aarch64-linux-gnu', f'-mcpu={cpu}', '-iterations=200', path],
                       capture_output=True, text=True)
    if r.returncode and 'requires: dotprod' in r.stderr:
        return None  # a core without the dot product (the A53): the loop cannot run there
    if r.returncode:
        sys.exit(f'neon-mca: llvm-mca failed on {path}: {r.stderr}')
    total = int(re.search(r'Total Cycles:\s+(\d+)', r.stdout).group(1))
    iters = int(re.search(r'Iterations:\s+(\d+)', r.stdout).group(1))
    return total / iters

# (stage, case, level, [(where, bytes stored per 16 output pixels, want, avoid)])
F32_ONLY = ['fmul', 'fadd'], ['fcvt', 'scvtf', 'ucvtf', r'^st[234]', 'fcvtz', 'frint']
COPY, BLEND, TAPS = '*o = a as f32;', '*o = a + w * (b as f32 - a);', 'out[x] = a + w[x] * (b - a);'
YUV_ROW = 'let x = ((m[r][0] * y + k[r]) + m[r][2] * v) + m[r][1] * u;'
RGB_ROW = '(c0[i], c1[i], c2[i]) = rgb_to(comps[0][i], comps[1][i], comps[2][i]);'
ROUND = 'let r = round_even_small(clamp_ps(v * sc + bi, lo, hi));'
WEAVE = 'px[ch] = bytes[ch][x];'
STORE = 'put::<T>(o, v * sc + bi);'
CASES = [
    ('sampling', 'NV12 (Y 3x one row, UV 1.5x two rows)', 'NEON', [
        ('neon::sample_blocks::<1, 1, true, false>', 64, (), ()),
        ('neon::sample_blocks::<1, 2, false, true>', 128, (), ())]),
    ('sampling', 'NV12 (Y 3x one row, UV 1.5x two rows)', 'NEON, UV rows first', [
        ('neon::sample_blocks::<1, 1, true, false>', 64, (), ()),
        ('neon::rows_first::rows_first_blocks::<2>', 128, (), ())]),
    ('sampling', 'NV12 (Y 3x one row, UV 1.5x two rows)', 'baseline', [
        (COPY, 192, (), ()), (TAPS, 64, (), ()), (BLEND, 192, (), ()), (TAPS, 128, (), ())]),
    ('sampling', 'YUY2 (3x, one row)', 'NEON', [
        ('neon::sample_blocks::<2, 1, true, false>', 64, (), ()),
        ('neon::sample_blocks::<2, 2, false, false>', 128, (), ())]),
    ('sampling', 'YUY2 (3x, one row)', 'baseline', [(COPY, 384, (), ()), (TAPS, 192, (), ())]),
    ('sampling', 'RGBA (3x, one row)', 'NEON', [('neon::sample_blocks::<2, 4, true, false>', 256, (), ())]),
    ('sampling', 'RGBA (3x, one row)', 'baseline', [(COPY, 768, (), ()), (TAPS, 256, (), ())]),
    ('finish', 'YUV -> uint8 RGB hwc', 'NEON', [('neon::finish_rows::<f32, 0, 1, 0>', 48, ['^st3'], ())]),
    ('finish', 'YUV -> uint8 RGB hwc', 'baseline', [
        (YUV_ROW, 192, (), ()), (ROUND, 48, (), ()), (WEAVE, 48, ['^st3'], ())]),
    # YUY2's PIL rows blended down first: the three components' bytes widened to floats (the
    # baseline's byte-to-float loop, the same loop as `multitap::widen`) then the float finish,
    # against the finish that widens them as it loads them.
    ('finish', 'YUV -> uint8 RGB hwc', 'NEON, PIL\'s bytes widened first (YUY2)', [
        (COPY, 192, (), ()), ('neon::finish_rows::<f32, 0, 1, 0>', 48, ['^st3'], ())]),
    ('finish', 'YUV -> uint8 RGB hwc', 'NEON from PIL\'s bytes (YUY2)',
     [('neon::finish_rows::<u8, 0, 1, 0>', 48, ['^st3'], ())]),
    ('finish', 'YUV -> float32 RGB chw (mean/std)', 'NEON', [('neon::finish_rows::<f32, 0, 1, 2>', 192, (), ['^st3'])]),
    ('finish', 'YUV -> float32 RGB chw (mean/std)', 'baseline', [
        (YUV_ROW, 192, (), ()), (STORE, 192, *F32_ONLY)]),
    ('PIL horizontal', 'NV12 Y 3x (triangle 1 2 3 2 1 / 9)', 'NEON 2^-22 blocks, 3 rows a call',
     [('nest:3:neon::multitap_blocks::<1, true, 1, 3, false>', 64, (), ())]),
    ('PIL horizontal', 'NV12 Y 3x (triangle 1 2 3 2 1 / 9)', 'NEON whole taps, into bytes',
     [('neon::whole::tap_blocks::<5, 4>', 16, (), ())]),
    ('PIL horizontal', 'NV12 UV 1.5x (two members)', 'NEON 2^-22 blocks, 3 rows a call',
     [('nest:2:neon::multitap_blocks::<1, true, 2, 3, false>', 64, (), ())]),
    ('PIL horizontal', 'NV12 UV 1.5x (two members)', 'NEON 2^-22 blocks, 1 row a call',
     [('nest:2:neon::multitap_blocks::<1, true, 2, 1, false>', 64, (), ())]),
    ('PIL horizontal', 'NV12 UV 1.5x (two members)', 'NEON whole taps, into bytes',
     [('neon::whole::tap_blocks::<3, 4>', 16, (), ())]),
    ('PIL horizontal', 'YUY2 U or V 1.5x, halved (a run each)', 'NEON whole taps, into bytes',
     [('neon::whole::tap_blocks::<3, 2>', 16, (), ())]),
    ('packing', 'YUY2 row, per 64 bytes (both groups)', 'NEON ld2 a group',
     [('neon::pack::pack_bytes', 64, ['ld2'], ())]),
    ('packing', 'YUY2 row, per 64 bytes (both groups)', 'NEON ld4 once, chroma halved',
     [('neon::pack::pack_bytes_split', 64, ['ld4', 'st2'], ())]),
    ('PIL vertical', 'NV12 Y 3x (five rows)', 'NEON over the f32 ring',
     [('nest:5:convert::driver::rows', 64, [r'^mla\s', 'cvtf'], ['fmul', 'ushll'])]),
    ('PIL vertical', 'NV12 Y 3x (five rows)', 'NEON over the byte ring',
     [('neon::vertical::halves::<5, false, false>', 64, ['umlal'], ())]),
    ('PIL vertical', 'NV12 U or V 1.5x (three rows)', 'NEON over the f32 ring',
     [('nest:3:convert::driver::rows', 64, [r'^mla\s', 'cvtf'], ['fmul', 'ushll'])]),
    ('PIL vertical', 'NV12 U or V 1.5x (three rows)', 'NEON over the byte ring',
     [('neon::vertical::halves::<3, false, false>', 64, ['umlal'], ())]),
    ('PIL vertical', 'RGBA 3x (six rows), a member', 'NEON over the byte ring, into f32',
     [('neon::vertical::halves::<6, false, false>', 64, ['umlal'], ())]),
    ('PIL vertical', 'RGBA 3x (six rows), a member', 'NEON over the byte ring, into bytes',
     [('neon::vertical::halves::<6, true, false>', 16, ['umlal'], ())]),
    ('finish', 'RGBA -> uint8 RGB hwc', 'NEON', [('neon::finish_rows::<f32, 1, 1, 0>', 48, ['^st3'], ())]),
    ('finish', 'RGBA -> uint8 RGB hwc', 'NEON from PIL\'s bytes',
     [('in:convert::driver::rows', 48, ['^st3', r'^eor\s'], ['cvt', 'fmul'])]),
    ('area', 'NV12 UV 1.5x (two rows, weights 1 and 2)', 'NEON quads, each row times its weight',
     [('neon::quads::quads_of::<f32, 2, 2, 2, 1>', 128, (), ())]),
    ('area', 'NV12 UV 1.5x (two rows, weights 1 and 2)', 'NEON quads, the weights folded into the held table',
     [('neon::quads::quads_of::<f32, 2, 1, 2, 1>', 128, (), ())]),
    ('area', 'RGBA 3x (three rows), quads + finish', 'NEON dot product into f32, float finish', [
        ('neon::quads::quads_of::<f32, 3, 0, 4, 1>', 256, (), ()),
        ('neon::finish_rows::<f32, 1, 1, 0>', 48, ['^st3'], ())]),
    ('area', 'RGBA 3x (three rows), quads + finish', 'NEON dot product into bytes, byte finish', [
        ('neon::quads::quads_of::<u8, 3, 0, 4, 1>', 64, (), ()),
        ('in:convert::driver::rows', 48, ['^st3', r'^eor\s'], ['cvt', 'fmul'])]),
    ('finish', 'RGBA -> uint8 RGB hwc', 'baseline', [
        (RGB_ROW, 192, (), ()), (ROUND, 48, (), ()), (WEAVE, 48, ['^st3'], ())]),
]

funcs = parse(asm)
print(f'assembly: {asm}\nllvm-mca: {mca}')
print('cycles per 16 output pixels, or 16 outputs of one member for PIL\'s passes (llvm-mca estimates, not timings)\n')
head = f'| stage | case | level | loops (instructions/iteration, bytes stored/iteration) | ' + \
       ' | '.join(cpus) + ' |'
print(head)
print('|' + '---|' * (4 + len(cpus)))
for n, (stage, case, level, parts) in enumerate(CASES):
    loops = [choose(funcs, where, need, want, avoid) for where, need, want, avoid in parts]
    shape = ' + '.join(f'{len(b)}/{stored(b)}' for b, _ in loops)
    per_cpu = []
    for cpu in cpus:
        each = [cycles(b, cpu, f'{n}-{k}-{cpu}') for k, (b, _) in enumerate(loops)]
        total = None if None in each else sum(c * need / stored(b) for c, (b, need) in zip(each, loops))
        per_cpu.append('–' if total is None else f'{total:.1f}')
    print(f'| {stage} | {case} | {level} | {shape} | ' + ' | '.join(per_cpu) + ' |')
print(f'\nloop bodies: {loop_dir}/')
PY

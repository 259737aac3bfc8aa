#!/usr/bin/python3
# Random differential fuzz of compiled code against the interpreter (adversary round 3):
# elementwise functions over every dtype with casts, special literals (nan, inf, -0.0, the
# ends of each integer range), min/max/select/if_then_else, every math intrinsic, //, %,
# truncdiv/truncmod (divisors made nonzero: division by zero is a documented difference),
# gathers A[X[vi]] that go out of bounds for some data, under serial/parallel/vectorized/unroll
# loops of 1, 7, 13 or 16 iterations. Each program runs with `tirc run --engine interp` and
# `--engine jit` on the same random inputs; outputs must match (floats within 1e-5), errors
# must be the same out-of-bounds access (same site in serial code).
# Usage: tests/codegen/fuzz_jit_vs_interp.py FIRST_SEED COUNT [TIRC] (writes /tmp/tirc_fuzz/)
import random, subprocess, sys, os, numpy as np
T=sys.argv[3] if len(sys.argv) > 3 else 'build/tirc'
D='/tmp/tirc_fuzz'
os.makedirs(D, exist_ok=True)
INTS=['i8','i16','i32','i64','u8','u16','u32']
FLTS=['f16','bf16','f32','f64']
ALL=INTS+FLTS+['bool']
FUN1=['exp','log','log2','log10','log1p','expm1','sqrt','rsqrt','sin','cos','tan','tanh','sigmoid','erf','abs','floor','ceil','round','trunc','sign']
class G:
    def __init__(s, r, bufs, scalars):
        s.r=r; s.bufs=bufs; s.scalars=scalars
    def lit(s,t):
        r=s.r
        if t=='bool': return r.choice(['bool(1)','bool(0)'])
        if t in FLTS: return t+'('+r.choice(['0.0','-0.0','1.5','-2.5','inf','-inf','nan','1e30','-1e30','65504.0','3.0','0.5'])+')'
        vals={'i8':[-128,127,-1,3],'i16':[-32768,32767,-7],'i32':[-2147483648,2147483647,-5,100000],'i64':[-9223372036854775807,9223372036854775807,-3,4294967296],
              'u8':[0,255,200,7],'u16':[0,65535,40000],'u32':[0,4294967295,3000000000,9]}[t]
        v=r.choice(vals)
        return f'{t}({v})' if v>=0 else f'{t}(0 - {t}({-v}))' if t in ('i64',) else f'{t}({v})'
    def leaf(s,t):
        r=s.r
        k=r.random()
        if k<0.5:
            n,bt=r.choice(s.bufs); e=f'{n}[vi]' if r.random()<0.6 else f'{n}[X[vi]]'
        elif k<0.7 and s.scalars:
            n,bt=r.choice(s.scalars); e=n
        else:
            return s.lit(t)
        return e if bt==t else f'{t}({e})'
    def gen(s,t,d):
        r=s.r
        if d<=0 or r.random()<0.2: return s.leaf(t)
        if t=='bool':
            k=r.random()
            if k<0.5:
                t2=r.choice(ALL[:-1]); op=r.choice(['<','<=','>','>=','==','!='])
                return f'({s.gen(t2,d-1)} {op} {s.gen(t2,d-1)})'
            if k<0.8: return f'({s.gen(t,d-1)} {r.choice(["&&","||"])} {s.gen(t,d-1)})'
            if k<0.9: return f'!{s.gen(t,d-1)}'
            return f'bool({s.gen(r.choice(ALL[:-1]),d-1)})'
        k=r.random()
        if k<0.35:
            ops=['+','-','*','min','max']
            if t in INTS: ops+=['//','%','truncdiv','truncmod']
            else: ops+=['/']
            op=r.choice(ops); a=s.gen(t,d-1); b=s.gen(t,d-1)
            if op in ('//','%','truncdiv','truncmod'):
                b=f'select({b} == {t}(0), {t}(7), {b})'
            if op in ('min','max','truncdiv','truncmod'): return f'{op}({a}, {b})'
            return f'({a} {op} {b})'
        if k<0.45: return f'-{s.gen(t,d-1)}' if t not in ('u8','u16','u32') or True else s.gen(t,d-1)
        if k<0.6:
            f=r.choice(['select','if_then_else'])
            return f'{f}({s.gen("bool",d-1)}, {s.gen(t,d-1)}, {s.gen(t,d-1)})'
        if k<0.8:
            t2=r.choice(ALL); return f'{t}({s.gen(t2,d-1)})'
        if t in FLTS:
            if r.random()<0.15: return f'pow({s.gen(t,d-1)}, {s.gen(t,d-1)})'
            return f'{r.choice(FUN1)}({s.gen(t,d-1)})'
        return f'{r.choice(["abs","sign"])}({s.gen(t,d-1)})'

def prog(seed):
    r=random.Random(seed)
    n=r.choice([16,13,7,1])
    bufs=[]; params=[]
    for j in range(r.randint(1,3)):
        t=r.choice(ALL); name='ABC'[j]
        rng='' if t=='bool' else r.choice(['',' in [-100, 100]',' in [-3, 3]',' in [0, 300]'] if t in FLTS else ['',' in [-130, 130]',' in [0, 70000]',' in [-3, 3]'])
        if t in ('u8','u16','u32') and '-' in rng: rng=' in [0, 255]'
        bufs.append((name,t)); params.append(f'{name}: {t}[{n}]{rng}')
    params.append(f'X: i32[{n}] in [{r.choice([0,-1])}, {n + r.choice([-1,0,1])}]')
    scalars=[]
    for j in range(r.randint(0,2)):
        t=r.choice(ALL[:-1]); scalars.append((f's{j}',t)); params.append(f's{j}: {t}')
    ot=r.choice(ALL)
    g=G(r,bufs,scalars)
    e=g.gen(ot, r.randint(2,5))
    kind=r.choice(['serial','parallel','vectorized','unroll','serial'])
    src=f'''func f({", ".join(params)}) -> (O: {ot}[{n}]) {{
  for i in {kind}({n}) {{
    block b(vi: spatial({n}) = i) {{ O[vi] = {e} }}
  }}
}}
'''
    return src, scalars

def run(path, eng, seed, scal, out):
    args=[T,'run',path,'--func','f','--random',str(seed),'--engine',eng,'--output',f'O={out}']
    for n,t in scal: args+=['--input',f'{n}={3 if t!="bool" else 1}']
    p=subprocess.run(args,capture_output=True,text=True,timeout=60)
    return p.returncode, p.stderr.strip()

bad=0
oob=[0]
def kind_of(p):
    t=open(p).read()
    return 'serial' if ' serial(' in t or 'unroll(' in t else 'other'
start=int(sys.argv[1]); cnt=int(sys.argv[2])
for seed in range(start,start+cnt):
    src,scal=prog(seed)
    path=f'{D}/p{seed}.tir'; open(path,'w').write(src)
    ri,ei=run(path,'interp',seed,scal,f'{D}/i{seed}.npy')
    rj,ej=run(path,'jit',seed,scal,f'{D}/j{seed}.npy')
    if ri==2 and 'error' in ei and rj==2 and ei.split('error:')[0]==ej.split('error:')[0] and ('parse' in ei or ei==ej):
        continue
    if ri==2 and rj==2 and 'out-of-bounds' in ei and 'out-of-bounds' in ej:
        if ei.split(']:')[0]!=ej.split(']:')[0] and kind_of(path)=='serial': print('OOB SITE',seed,ei[:150],'|',ej[:150]); bad+=1
        oob[0]+=1
        continue
    if ri!=rj:
        if 'division by zero' in ei: continue
        print('RC MISMATCH',seed,ri,rj,ei[:200],'|',ej[:200]); bad+=1; continue
    if ri!=0:
        if ei!=ej: print('ERR MISMATCH',seed,ei[:200],'|',ej[:200]); bad+=1
        continue
    a=np.load(f'{D}/i{seed}.npy'); b=np.load(f'{D}/j{seed}.npy')
    if a.dtype!=b.dtype: print('DTYPE',seed); bad+=1; continue
    if a.dtype.kind=='f' or str(a.dtype)=='uint16' and False:
        ok=np.allclose(a.astype(np.float64),b.astype(np.float64),rtol=1e-5,atol=1e-6,equal_nan=True)
    else:
        ok=np.array_equal(a,b)
    if not ok:
        idx=np.nonzero(~np.isclose(a.astype(np.float64),b.astype(np.float64),equal_nan=True,rtol=1e-5,atol=1e-6) if a.dtype.kind=='f' else a!=b)[0][:3]
        print('VALUE MISMATCH',seed,idx,a[idx],b[idx]); bad+=1
print('done',bad,'oob',oob[0])

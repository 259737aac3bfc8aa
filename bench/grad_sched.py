#!/usr/bin/env python3
"""Scheduled gradients (tests/zoo/grad_sched16/*.tir) at realistic sizes, compiled.

Each file holds a forward F, `# grad: F` and the schedule a user wrote against the F_grad
that `tirc grad` prints (often a schedule of F too). The files keep test-sized shapes; here
each is enlarged by whole-word substitution of its extents (SIZES below: the schedules use
only split factors that still divide), `tirc grad` derives F_grad, and F and F_grad are
timed scheduled and unscheduled (`tirc bench` with and without `--no-schedule`, the same
random inputs). Columns: F_grad unscheduled / scheduled (speedup), F unscheduled /
scheduled, and F_grad / F (both scheduled when F has a schedule).

Times are the minimum over rounds of `tirc bench`'s minimum (the machine is shared).

    /usr/bin/python3 bench/grad_sched.py [--tirc PATH] [--ops a,b] [--rounds R] [--repeat N]
                                         [--threads T] [--update bench/README.md] [--set 16|17]

`--set 17` takes the CPU files of tests/zoo/grad_sched17 (helper round 17: fusion across
gradient blocks, rfactor; the GPU files there are checked in the GPU emulator, not timed) and
writes the section "Scheduled gradients r17" of the README. `--set 18` takes the CPU files of
tests/zoo/grad_sched18 (round 18: tensorize, rfactor, cache_write, F and F_grad scheduled in one
file, second order) and writes "Scheduled gradients r18"; there the extents are enlarged in the
`func` items only (intrinsics and split factors keep their sizes). A second-order file holds F_grad
as `tirc grad -o` printed it with `# grad: F_grad`; its SIZES18 entry names F_grad as the function,
so F_grad_grad is timed against F_grad. `--set 19` takes the CPU files of tests/zoo/grad_sched19
(round 19: whole layers from the outsider rounds 17-18, cache_inplace, scans) enlarged the same
way and writes "Scheduled gradients r19"; swin_window_attn (window / shift constants not
substitutable token by token) and encoder_layer (its F_grad's hoist blocks are numbered
differently at the larger size, so the file's schedule does not apply there: h6 round-19 finding
F3) keep their test sizes and are left out.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from readme_section import write_section  # noqa: E402

# file stem -> (function, {extent: larger extent}) applied to whole-word integer tokens.
SIZES = {
    "matmul": ("matmul", {"32": "512", "64": "512", "48": "512"}),
    "dense_bias_relu": ("dense_bias_relu", {"16": "256", "32": "512", "64": "1024"}),
    "conv2d": ("conv2d", {"8": "32", "14": "56", "16": "58", "15": "57"}),
    "softmax": ("softmax", {"16": "512", "64": "1024"}),
    "layer_norm": ("layer_norm", {"16": "512", "64": "1024", "0.015625": "0.0009765625"}),
    "cumsum": ("cumsum", {"32": "512", "128": "1024"}),
    "take": ("take", {"64": "4096", "32": "256", "48": "8192", "63": "4095"}),
    "avg_pool2d": ("avg_pool2d", {"16": "64", "28": "56"}),
    "cross_entropy": ("cross_entropy", {"32": "1024", "100": "1000", "99": "999", "32.0": "1024.0"}),
    "mlp": ("mlp", {"32": "256", "64": "512", "128": "1024", "16": "64"}),
    "conv2d_depthwise": ("conv2d_depthwise", {"16": "64", "14": "56", "15": "57"}),
    "conv2d_transpose": ("conv2d_transpose", {"8": "32", "17": "65", "16": "64", "15": "63"}),
    "rnn_tanh": ("rnn_tanh", {"16": "64", "64": "512", "32": "256"}),
    "upsampling_nearest": ("upsampling_nearest", {"16": "64", "32": "128"}),
}

# Round 17 (tests/zoo/grad_sched17, CPU files only).
SIZES17 = {
    "rms_norm": ("rms_norm", {"24": "1024", "256": "2048", "0.00390625": "0.00048828125"}),
    "rms_norm_rowfused": ("rms_norm", {"24": "1024", "256": "2048", "0.00390625": "0.00048828125"}),
    "gelu_mlp": ("gelu_mlp", {"32": "256", "48": "512", "64": "1024", "40": "512"}),
    "embedding_bag": ("embedding_bag", {"300": "4096", "299": "4095", "64": "512", "8": "16", "256": "512"}),
    "conv2d_dilated": ("conv2d_dilated", {"6": "32", "14": "60", "10": "56"}),
    "lrn": ("lrn", {"12": "64", "20": "56", "2": "4"}),
    "logsumexp": ("logsumexp", {"48": "1024", "512": "2048"}),
    "group_norm": ("group_norm", {"8": "64", "4": "32", "12": "56",
                                  "0.003472222222222222": "0.00015943877551020407"}),
    "concat_slice": ("concat_slice", {"64": "512", "96": "768", "192": "1536", "32": "256"}),
    "cumprod": ("cumprod", {"64": "1024", "256": "1024", "255": "1023", "254": "1022"}),
    "cumprod_rowfused": ("cumprod", {"64": "1024", "256": "1024", "255": "1023", "254": "1022"}),
    "max_pool2d_pad": ("max_pool2d_pad", {"8": "64", "23": "111", "12": "56"}),
    "pad_conv_relu": ("pad_conv_relu", {"8": "32", "14": "56", "16": "58", "15": "57", "13": "55"}),
    "gru": ("gru", {"12": "32", "24": "256", "96": "768", "32": "256", "64": "512", "11": "31"}),
}

NOTES17 = """
Measured 2026-11-27 18:10-18:27 with a load average of 13-15 on 2 cores (five helpers building
and testing): parallel loops at 2 threads wait for descheduled threads, and differences under
about 2x are noise (helper h6, round 17; one-thread bisections also noisy, +-30%).
- embedding_bag (10.9x): the scatter tiled by 16 columns, column tiles parallel outside the bag
  loop: no two tiles touch one element, lowering drops the atomics (drop_unraced_atomic).
- concat_slice (2.7x), logsumexp (1.5x: rfactor of three row sums; inlining the exp hoist made it
  1.4x slower than unscheduled, each reader evaluating exp), gru (1.3x), gelu_mlp (1.9x).
- gelu_mlp F_grad / F 0.31: the forward (unscheduled, k innermost, W read by columns) is slower
  than its gradient, which autodiff's loop-order pass emits with unit-stride inner loops.
- cumprod (0.22x) and rms_norm (0.5x): scheduled slower. At one thread cumprod's schedule is
  3.4 ms against 2.9 ms (0.8 ms of it the parallel loops, none visible without them); the rest is
  the waiting above. Outlined parallel bodies lose `noalias` (h6 round-17 finding F4: a
  two-output reduction under `parallel` is 4x slower at one thread; group_norm's recomputed
  statistics). rms_norm's bisection (one instruction removed at a time, one thread) stayed
  inside the noise; with only the compute_inline it equals unscheduled.
- F_grad / F above 3: group_norm 5.0 (F_grad makes about ten full-tensor passes, 72 MB against
  the forward's two: memory bound), rms_norm 5-8, max_pool2d_pad 4.3 (recomputed pool, argmax
  pass and scatter), cumprod_rowfused 4.0 (recomputed scan, reverse scan, copy and zero-fill).
- lrn's row pipeline (sqr_sum_dX moved into norm_dX_dS's row loop) is refused by the tirc of
  18:30 (tests/zoo/grad_sched17/lrn_reverse_compute_at_window.tir, applied since round 18), not timed; lrn
  (0.67x) and conv2d_dilated (0.92x) within the noise.
"""

NOTES = """
Measured 2026-11-27 with a load average near 9 on 2 cores (shared with other jobs): parallel
loops gained little, and differences under about 2x are noise. What the large ratios come
from (helper h6, round 16; bisected with one block's schedule at a time, `--threads 1`):
- take (0.02x): the scatter Y_dW is "atomic"; inside the user's `parallel(j0)` the backend makes
  every update an `atomicrmw fadd` and keeps the vectorized lanes scalar (docs/codegen.md), also
  when the parallel loop binds only the spatial iter var (each thread owns its columns, no
  update can race): 13-27 ms against 0.27 ms unscheduled.
- upsampling_nearest (0.03x): `vectorize(x)` of a 64-iteration loop reading Y_grad with stride 2
  emits `<64 x float>` gathers: 19 ms against 0.35 ms for the serial loop that LLVM vectorizes
  itself; split to 8 lanes first: 1.2 ms, still slower than serial.
- conv2d (0.36x): `vectorize` of conv_dP's pixel loop (58 iterations, a `where` over the window)
  gives masked `<58 x float>` code: 150 ms against 57 ms serial (78 ms with 8 lanes). Without
  that instruction the schedule is 57 ms (the same as unscheduled, one thread).
- rnn_tanh: `parallel(k0)` of hw_rev inside the reverse scan loop costs 100 ms at one thread
  (252 ms against 148 ms without that instruction): the outlined parallel body is not
  vectorized (22 vector instructions in the module against 544 serial). Minimal: a transposed
  GEMV split/reorder/parallel, 0.0198 ms against 0.0122 ms serial at one thread.
- Noise: softmax 1.03x in one run, 0.48x in another (parallel loops wait for descheduled
  threads); layer_norm rerun at one thread: 2.4 ms scheduled, with its vectorize or parallel
  instructions removed, and unscheduled alike.
- matmul (F_grad 4.3x to 16x F across three runs, FLOP ratio 2): the schedule of C_dA
  (C_grad @ B^T) vectorizes along B's rows (stride 512): a limit of the user's schedule (B
  would need a transposed cache), not of tirc.
"""


# Round 18 (tests/zoo/grad_sched18, CPU files only): enlarged in `func` items only.
SIZES18 = {
    "linear": ("linear", {"32": "512", "64": "1024", "48": "1024"}),
    "ln_linear": ("ln_linear", {"32": "512", "64": "1024", "48": "1024", "0.015625": "0.0009765625"}),
    "conv_nhwc_bias_relu": ("conv_nhwc_bias_relu", {"2": "4", "8": "32", "10": "34", "9": "33", "16": "64"}),
    "attention_mask": ("attention_mask", {"2": "8", "16": "256", "32": "64", "0.17677669529663687": "0.125"}),
    "lstm_cell": ("lstm_cell", {"16": "256", "32": "512", "64": "1024", "96": "1536", "128": "2048"}),
    "dwsep_conv": ("dwsep_conv", {"2": "4", "16": "64", "10": "58", "8": "56", "32": "128"}),
    "embedding_linear": ("embedding_linear", {"32": "512", "100": "50000", "99": "49999", "64": "1024",
                                              "48": "1024"}),
    "softmax_ce_linear": ("softmax_ce_linear", {"32": "512", "64": "1024", "100": "1000", "99": "999",
                                                "0.03125": "0.001953125"}),
    "group_norm_silu": ("group_norm_silu", {"2": "16", "8": "64", "0.00390625": "0.00006103515625"}),
    "tanh_linear_second_order": ("tanh_linear_grad", {"16": "512", "48": "1024", "32": "1024"}),
    "im2col_conv": ("im2col_conv", {"16": "64", "10": "58", "8": "56", "144": "576", "32": "128", "64": "3136"}),
    "max_pool_overlap": ("max_pool_overlap", {"4": "16", "16": "64", "17": "113", "8": "56"}),
    "gap_head": ("gap_head", {"8": "64", "32": "512", "7": "14", "10": "1000",
                              "0.02040816326530612": "0.00510204081632653"}),
    "batch_norm_relu": ("batch_norm_relu", {"8": "32", "16": "64", "6": "28",
                                            "0.003472222222222222": "0.0000398596938775510"}),
    "conv3d_bias": ("conv3d_bias", {"2": "4", "4": "16", "6": "18", "8": "32"}),
    "gru_cell": ("gru_cell", {"16": "256", "32": "512", "64": "1024", "96": "1536"}),
    "cosine_classifier": ("cosine_classifier", {"32": "512", "64": "1024", "48": "1024"}),
    "instance_norm_relu": ("instance_norm_relu", {"4": "16", "16": "64", "12": "56",
                                                  "0.006944444444444444": "0.00031887755102040814"}),
    "logreg_second_order": ("logreg_grad", {"64": "65536", "32": "256", "0.015625": "0.0000152587890625"}),
    "prelu_mse": ("prelu_mse", {"16": "32", "32": "64", "8": "56", "0.00003051757812": "1.557e-07"}),
}

NOTES18 = """
Measured 2026-11-27 20:50-21:25 with a load average of 12-20 on 2 cores (seven helpers building
and testing), 1 round x 3 runs, the script run in seven parts (`--ops`): differences under about
2x are noise (helper h6, round 18; one-thread reruns quoted below). For the two second-order
files (tanh_linear_second_order, logreg_second_order) the "F" columns are F_grad (first order,
scheduled in the file) and "F_grad" is F_grad_grad.
- Tensorized GEMM adjoints (linear, ln_linear, lstm_cell, gru_cell, attention_mask, im2col_conv,
  second order): the user kernels keep the 4x16 accumulator tile in memory (a load and a store per
  4 FMAs): tirc has no way to give an accumulation adjoint a register / "local" accumulator
  (cache_write refuses a buffer with a zero-fill block, no cache_inplace: h6 finding F4). The
  tile loop order decides: linear's mm_dX with the column tile outside the reduce tile
  (i0, k0, j0) ran 2x slower than unscheduled at one thread (W read in 16-column stripes 4 KB
  apart); with the reduce tile outside (i0, j0, k0), as in the files, equal at one thread.
- conv_nhwc_bias_relu: the recomputed forward conv is half of the unscheduled F_grad; F_grad / F
  is 17 (30 in a first run) because F's schedule reaches ~50 GFLOP/s (channels vectorized,
  accumulator row in registers) while conv_dP vectorized over c reads W[r, s, c, f] with stride
  64 (gathers) and the tensorized conv_dW reloads its tile (F4).
- batch_norm_relu (0.69x) and max_pool_overlap (0.75x) scheduled slower at 2 threads: at one
  thread batch_norm_relu is equal (79 / 72 ms); max_pool_overlap 82 -> 113 ms with the
  decompose_reduction of the recomputed pool, not reproduced on the forward pool alone
  (decomposed: equal or faster), left as noise. batch_norm_relu F_grad / F 40: seven scalar
  per-channel reductions and 4-D hoisted buffers (334 MB moved against the forward's 96 MB) at
  0.5 GFLOP/s.
- softmax_ce_linear: F scheduled slower at 2 threads (1114 -> 1472 ms), equal at one thread
  (3067 / 2974 ms): parallel loops waiting for descheduled threads.
- GPU files (linear_gpu, lstm_cell_gpu, group_norm_silu_gpu, max_pool_overlap_gpu,
  conv_bias_relu_gpu, softmax_ce_linear_gpu, embedding_linear_gpu, attention_mask_gpu) are
  checked by ptxas and the GPU emulator (tests/zoo/grad_sched18_test.cpp), not timed.
"""


# Round 19 (tests/zoo/grad_sched19, CPU files only): enlarged in `func` items only. Where one
# extent plays two roles (hidden size and map size), both grow together.
SIZES19 = {
    "pixel_shuffle_conv": ("pixel_shuffle_conv", {"6": "56", "12": "112", "16": "64", "32": "128", "8": "32"}),
    "conv2d_group": ("conv2d_group", {"16": "64", "32": "128", "4": "16", "8": "32", "10": "34"}),
    "ema": ("ema", {"24": "512", "64": "4096"}),
    "convlstm_cell": ("convlstm_cell", {"8": "32", "4": "16", "12": "48", "16": "64", "24": "96", "32": "128"}),
    "lstm_seq": ("lstm_seq", {"10": "64", "24": "256", "32": "256", "64": "512", "96": "768", "128": "1024"}),
    "deform_conv2d": ("deform_conv2d", {"10": "58", "10.0": "58.0", "8": "56", "4": "16"}),
    "avg_pool_pad": ("avg_pool_pad", {"16": "64", "14": "112", "13": "111", "7": "56"}),
    "adaptive_avg_pool": ("adaptive_avg_pool", {"16": "256"}),
    "resize_bilinear": ("resize_bilinear", {"16": "64", "4": "8", "12": "72", "20": "120", "11": "71"}),
    "bmm_t": ("bmm_t", {"4": "16", "32": "256", "64": "512", "48": "512"}),
    "l2_normalize": ("l2_normalize", {"256": "8192", "96": "1024"}),
    "l2_normalize_second_order": ("l2_normalize_grad", {"256": "8192", "96": "1024"}),
    "kl_log_softmax": ("kl_log_softmax", {"128": "4096", "80": "1000", "0.0078125": "0.000244140625"}),
    "cumsum_scan": ("cumsum_scan", {"48": "1024", "64": "2048"}),
    "vit_patch_embed": ("vit_patch_embed", {"64": "256", "8": "16", "32": "64", "0.015625": "0.00390625"}),
}

NOTES19 = """
Measured 2026-11-28 00:41-01:05 with a load average of 15-23 on 2 cores (eight helpers building
and testing), 2 rounds x 3 runs at 2 threads; differences under about 2x are noise (helper h6,
round 19). One-thread reruns (`--threads 1 --rounds 2 --repeat 5`) quoted below. swin_window_attn
and encoder_layer keep their test sizes (not timed): encoder_layer's F_grad numbers its hoist
blocks differently at the larger size, so its schedule does not apply there (h6 finding F3).
- Three schedules were fixed after the table (reruns): reverse_compute_at rebuilds a moved
  block's loops in its iter-var order (as TVM does), which put avg_pool_pad's window taps inside
  the output columns (autodiff had them outside): 0.14x; with the taps reordered back, 1.66 ->
  1.68 ms at one thread (0.99x; 0.22x at 2 threads: the 1.7 ms function's parallel loop waits for
  descheduled threads). ema's decay gradient moved into the column tile read 8 MB arrays down the
  columns: time loop put outside the vectorized columns, 1.00x -> 1.34x (73 -> 55 ms).
  kl_log_softmax inlined exp(X - Mx) and the per-row log(Se) into every reader: 0.58x at one
  thread; kept as blocks in the row loop, 0.73x (114 -> 157 ms), the rest left.
- Gains: lstm_seq 3.27x (tensorized GEMM adjoints, parallel weight gradients), vit_patch_embed
  1.42x, convlstm_cell 1.40x, pixel_shuffle_conv 1.28x (F scheduled 3.3x), bmm_t 1.20x (the
  tensorized kernels keep their 4x16 accumulator in memory, as in round 18), cumsum_scan 1.20x.
- Slower or equal, within the noise at one thread: conv2d_group 0.73x (one thread 0.75x; a
  bisection with and without its cache_inplace accumulator and its parallel loop stayed within
  120-160 ms against 119-129 unscheduled), resize_bilinear 0.74x (1.01x at one thread),
  l2_normalize_second_order 0.58x (0.97x at one thread), l2_normalize 0.89x, deform_conv2d 0.98x.
  adaptive_avg_pool 0.24x (0.22x at one thread) is a 0.07 ms function: the per-plane parallel
  loop's overhead.
- F_grad / F: ema 56 after the fix (the forward scan is 1 ms; F_grad makes a copy, the reverse
  scan, three gradient passes and a zero-fill over 8 MB arrays), vit_patch_embed 13.5 (the
  forward patch GEMM is vectorized by LLVM; the backward's LayerNorm pieces and the rfactor-ed
  weight gradient are not), bmm_t 0.08 (the unscheduled forward reads B down its columns).
- Round 18's slower cases re-measured (`--set 18 --ops batch_norm_relu,max_pool_overlap --rounds 3
  --repeat 3`, the tirc of 00:05): batch_norm_relu 2.43x at 2 threads and 1.57x at one thread
  (not slower: round 18's 0.69x was noise); max_pool_overlap 0.88x at 2 threads and 0.78x at one
  thread, and in six interleaved one-thread rounds the full schedule took 117-367 ms against
  70-232 unscheduled, slower in every round (1.3-1.7x): real, but each half of the schedule alone
  (the parallel recomputed pool with its arg pass, or the parallel scatter with its zero-fill)
  stayed within the noise, so no single instruction is to blame; left.
- GPU files (rev_cumsum_gpu, instance_norm_gpu, global_max_pool_gpu, mish_linear_gpu, deform_conv2d_gpu,
  convlstm_cell_gpu) are checked by ptxas and the GPU emulator (tests/zoo/grad_sched19_test.cpp),
  not timed.
"""


def enlarge_funcs(text, table):
    # Whole-word integer / float tokens of the lines of `func` items; `intrin` and `schedule`
    # items keep their sizes (tile shapes of the intrinsics, split factors).
    out, in_func = [], False
    for line in text.splitlines(keepends=True):
        if re.match(r"(func|intrin|schedule)\b", line):
            in_func = line.startswith("func")
        out.append(enlarge(line, table) if in_func and not line.startswith("#") else line)
    return "".join(out)


def enlarge(text, table):
    # Only the func (not comments, not split factors in schedules: those are not in the table).
    def sub(m):
        return table.get(m.group(0), m.group(0))
    return re.sub(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", sub, text)


def bench(tirc, path, func, extra, repeat, threads):
    cmd = [tirc, "bench", path, "--func", func, "--json", "-n", str(repeat), "--threads", str(threads)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + out.stdout + out.stderr)
    return json.loads(out.stdout)["min_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tirc", default=os.path.join(ROOT, "build", "tirc"))
    ap.add_argument("--ops", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--update", default="")
    ap.add_argument("--set", default="16", choices=["16", "17", "18", "19"])
    a = ap.parse_args()
    sizes = {"16": SIZES, "17": SIZES17, "18": SIZES18, "19": SIZES19}[a.set]
    folder = "grad_sched" + a.set
    ops = a.ops.split(",") if a.ops else list(sizes)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for op in ops:
            func, table = sizes[op]
            src = open(os.path.join(ROOT, "tests", "zoo", folder, op + ".tir")).read()
            big = os.path.join(tmp, op + ".tir")
            g = os.path.join(tmp, op + "_g.tir")
            open(big, "w").write(enlarge_funcs(src, table) if a.set in ("18", "19") else enlarge(src, table))
            r = subprocess.run([a.tirc, "grad", big, "--func", func, "-o", g], capture_output=True, text=True)
            if r.returncode != 0:
                print(op, "grad failed:", r.stdout + r.stderr)
                continue
            has_f_sched = re.search(r"^schedule %s \{" % func, src, re.M) is not None
            t = {}
            try:
                for key, fn, extra in [("gu", func + "_grad", ["--no-schedule"]), ("gs", func + "_grad", []),
                                       ("fu", func, ["--no-schedule"]), ("fs", func, [])]:
                    t[key] = min(bench(a.tirc, g, fn, extra, a.repeat, a.threads) for _ in range(a.rounds))
            except RuntimeError as e:  # e.g. a schedule the current tirc refuses
                print(op, "bench failed:", str(e).splitlines()[-1], flush=True)
                continue
            f_ref = t["fs"] if has_f_sched else t["fu"]
            rows.append((op, t["gu"], t["gs"], t["gu"] / t["gs"], t["fu"], t["fs"] if has_f_sched else None,
                         t["gs"] / f_ref))
            print("%-16s grad %9.3f -> %9.3f ms (x%.2f)  fwd %9.3f -> %s ms  grad/fwd %.2f" %
                  (op, t["gu"], t["gs"], t["gu"] / t["gs"], t["fu"],
                   "%.3f" % t["fs"] if has_f_sched else "  (none)", t["gs"] / f_ref), flush=True)
    if a.update:
        lines = ["| op | F_grad unscheduled ms | F_grad scheduled ms | speedup | F unscheduled ms | "
                 "F scheduled ms | F_grad / F |", "|---|---|---|---|---|---|---|"]
        for op, gu, gs, sp, fu, fs, ratio in rows:
            lines.append("| %s | %.3f | %.3f | %.2fx | %.3f | %s | %.2f |" %
                         (op, gu, gs, sp, fu, "%.3f" % fs if fs is not None else "-", ratio))
        if a.set == "19":
            begin, end = "<!-- grad_sched19 begin -->", "<!-- grad_sched19 end -->"
            title, files, flag, notes = ("## Scheduled gradients r19 (bench/grad_sched.py --set 19)",
                                         "tests/zoo/grad_sched19/*.tir (CPU files)", " --set 19", NOTES19)
        elif a.set == "18":
            begin, end = "<!-- grad_sched18 begin -->", "<!-- grad_sched18 end -->"
            title, files, flag, notes = ("## Scheduled gradients r18 (bench/grad_sched.py --set 18)",
                                         "tests/zoo/grad_sched18/*.tir (CPU files)", " --set 18", NOTES18)
        elif a.set == "17":
            begin, end = "<!-- grad_sched17 begin -->", "<!-- grad_sched17 end -->"
            title, files, flag, notes = ("## Scheduled gradients r17 (bench/grad_sched.py --set 17)",
                                         "tests/zoo/grad_sched17/*.tir (CPU files)", " --set 17", NOTES17)
        else:
            begin, end = "<!-- grad_sched begin -->", "<!-- grad_sched end -->"
            title, files, flag, notes = ("## Scheduled gradients (bench/grad_sched.py)",
                                         "tests/zoo/grad_sched16/*.tir", "", NOTES)
        text = "\n".join([begin, title, "",
                          ("Files %s enlarged in their `func` items (SIZES%s in the script; intrinsics and"
                           " split factors keep their sizes); `tirc bench`" % (files, a.set) if a.set in ("18", "19") else
                           "Files %s enlarged (SIZES in the script); `tirc bench`" % files),
                          "min times, %d threads, %d rounds x %d runs. Reproduce:" % (a.threads, a.rounds, a.repeat),
                          "`/usr/bin/python3 bench/grad_sched.py --tirc build/tirc%s --update bench/README.md`." % flag,
                          ""] + lines + ["", notes.strip(), end, ""])
        write_section(text, begin, end, a.update)


if __name__ == "__main__":
    main()

"""Independent PyTorch references for the operator zoo (examples/ops/*.tir).

One function per operator, registered under the .tir file stem. Each takes the function's
parameters by name (floats as float64 tensors, integers as int64, bool as bool, scalar
params as 0-d tensors) and returns a dict {output name: tensor}. Written from the
operator's textbook / PyTorch definition, not from the .tir text, so that a mistake in
either shows up as a mismatch. Float outputs are differentiable with torch.autograd, which
gives the independent gradient reference used by tests/zoo (see check.py).
"""
import math

import torch
import torch.nn.functional as F

REFS = {}


def ref(name):
    def register(fn):
        REFS[name] = fn
        return fn
    return register


# ---------------------------------------------------------------- elementwise unary
ref("exp")(lambda X: {"Y": torch.exp(X)})
ref("log")(lambda X: {"Y": torch.log(X)})
ref("sqrt")(lambda X: {"Y": torch.sqrt(X)})
ref("rsqrt")(lambda X: {"Y": torch.rsqrt(X)})
ref("tanh")(lambda X: {"Y": torch.tanh(X)})
ref("sigmoid")(lambda X: {"Y": torch.sigmoid(X)})
ref("relu")(lambda X: {"Y": torch.relu(X)})
ref("leaky_relu")(lambda X: {"Y": F.leaky_relu(X, 0.1)})
ref("gelu")(lambda X: {"Y": F.gelu(X)})  # exact (erf) form
ref("softplus")(lambda X: {"Y": F.softplus(X)})
ref("abs")(lambda X: {"Y": torch.abs(X)})
ref("negative")(lambda X: {"Y": torch.neg(X)})
ref("clip")(lambda X: {"Y": torch.clamp(X, -0.5, 1.0)})
ref("floor")(lambda X: {"Y": torch.floor(X)})
ref("round")(lambda X: {"Y": torch.round(X)})  # half to even, as nearbyint
ref("prelu")(lambda X, Alpha: {"Y": F.prelu(X, Alpha)})

# ---------------------------------------------------------------- elementwise binary
ref("power")(lambda A, B: {"C": torch.pow(A, B)})
ref("maximum")(lambda A, B: {"C": torch.maximum(A, B)})
ref("minimum")(lambda A, B: {"C": torch.minimum(A, B)})
ref("select_where")(lambda Cond, A, B: {"C": torch.where(Cond, A, B)})
ref("add")(lambda A, B: {"C": A + B})
ref("subtract")(lambda A, B: {"C": A - B})
ref("multiply")(lambda A, B: {"C": A * B})
ref("divide")(lambda A, B: {"C": A / B})
ref("bias_add")(lambda X, Bias: {"Y": X + Bias.reshape(1, -1, 1, 1)})
ref("cast")(lambda X: {"Y": X.to(torch.float64) * 3.0})
ref("vadd")(lambda n, A, B: {"C": A + B})

# ---------------------------------------------------------------- normalisations, losses
ref("softmax")(lambda X: {"Y": torch.softmax(X, dim=1)})
ref("log_softmax")(lambda X: {"Y": torch.log_softmax(X, dim=1)})
ref("cross_entropy")(lambda X, I: {"L": F.cross_entropy(X, I).reshape(1)})
ref("logsumexp")(lambda X: {"Y": torch.logsumexp(X, dim=1)})
ref("mse_loss")(lambda P, T: {"L": F.mse_loss(P, T).reshape(1)})


@ref("l2_normalize")
def _l2_normalize(X):
    sq = (X * X).sum(dim=1, keepdim=True)
    return {"Y": X / torch.sqrt(torch.clamp(sq, min=1e-12))}


ref("layer_norm")(lambda X, Gamma, Beta: {"Y": F.layer_norm(X, (X.shape[-1],), Gamma, Beta, eps=1e-5)})


@ref("batch_norm")
def _batch_norm(X, Gamma, Beta):
    y = F.batch_norm(X, None, None, Gamma, Beta, training=True, eps=1e-5)
    return {"Y": y, "Mean": X.mean(dim=(0, 2, 3)), "Var": X.var(dim=(0, 2, 3), unbiased=False)}


ref("lrn")(lambda X: {"Y": F.local_response_norm(X, 3, alpha=0.5, beta=0.75, k=2.0)})

# ---------------------------------------------------------------- reductions
ref("sum")(lambda X: {"Y": X.sum(dim=1)})
ref("mean")(lambda X: {"Y": X.mean(dim=(1, 2), keepdim=True)})
ref("max")(lambda X: {"Y": X.amax(dim=1)})
ref("min")(lambda X: {"Y": X.amin(dim=1)})
ref("prod")(lambda X: {"Y": X.prod(dim=1)})
ref("collapse_sum")(lambda X: {"Y": X.sum(dim=(0, 2)).reshape(3, 1)})
ref("cumsum")(lambda X: {"Y": torch.cumsum(X, dim=1)})
ref("cumprod")(lambda X: {"Y": torch.cumprod(X, dim=1)})


# ---------------------------------------------------------------- recurrences (scans)
@ref("ema")
def _ema(X, A):
    ys = [X[0]]
    for t in range(1, X.shape[0]):
        ys.append(A * ys[-1] + (1 - A) * X[t])
    return {"Y": torch.stack(ys)}


@ref("rnn_tanh")
def _rnn_tanh(X, W, U, Bias):
    h = torch.zeros(4, dtype=X.dtype)
    hs = []
    for t in range(X.shape[0]):
        # torch.nn.RNNCell's formula, with our (differentiable) parameters.
        h = torch.tanh(F.linear(X[t], U, Bias) + F.linear(h, W))
        hs.append(h)
    return {"H": torch.stack(hs)}


@ref("gru")
def _gru(X, Wi, Wh, Bi, Bh):
    h = torch.zeros(4, dtype=X.dtype)
    hs = []
    for t in range(X.shape[0]):
        gi, gh = F.linear(X[t], Wi, Bi), F.linear(h, Wh, Bh)
        ir, iz, inn = gi.chunk(3)
        hr, hz, hn = gh.chunk(3)
        r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
        n = torch.tanh(inn + r * hn)
        h = (1 - z) * n + z * h
        hs.append(h)
    return {"H": torch.stack(hs)}


@ref("lstm")
def _lstm(X, U, W, Bias):
    h = torch.zeros(4, dtype=X.dtype)
    c = torch.zeros(4, dtype=X.dtype)
    hs, cs = [], []
    for t in range(X.shape[0]):
        z = F.linear(X[t], U, Bias) + F.linear(h, W)
        i, f, g, o = z.chunk(4)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
        cs.append(c)
    return {"H": torch.stack(hs), "C": torch.stack(cs)}

# ---------------------------------------------------------------- linear algebra
ref("dense")(lambda X, W: {"Y": X @ W.T})
ref("matmul")(lambda A, B: {"C": A @ B})
ref("batch_matmul")(lambda A, B: {"C": A @ B.transpose(1, 2)})
ref("mlp")(lambda X, W1, B1, W2, B2: {"Y": torch.relu(X @ W1.T + B1) @ W2.T + B2})


@ref("attention")
def _attention(Q, K, V):
    p = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1]), dim=-1)
    return {"O": p @ V}


# ---------------------------------------------------------------- convolutions, pooling
ref("conv2d")(lambda X, W: {"Y": F.conv2d(X, W, padding=1)})
ref("conv2d_strided")(lambda X, W: {"Y": F.conv2d(X, W, stride=2)})
ref("conv2d_dilated")(lambda X, W: {"Y": F.conv2d(X, W, dilation=2)})
ref("conv2d_depthwise")(lambda X, W: {"Y": F.conv2d(X, W, padding=1, groups=X.shape[1])})
ref("conv1d_strided")(lambda X, W: {"Y": F.conv1d(X, W, stride=3)})
ref("conv2d_transpose")(lambda X, W: {"Y": F.conv_transpose2d(X, W, stride=2, padding=1)})
ref("max_pool2d")(lambda X: {"Y": F.max_pool2d(X, 2, 2)})
ref("max_pool2d_overlap")(lambda X: {"Y": F.max_pool2d(X, 3, 2)})
ref("avg_pool2d")(lambda X: {"Y": F.avg_pool2d(X, 3, 1, padding=1, count_include_pad=True)})
ref("global_avg_pool2d")(lambda X: {"Y": X.mean(dim=(2, 3), keepdim=True)})
ref("global_max_pool2d")(lambda X: {"Y": X.amax(dim=(2, 3), keepdim=True)})
ref("upsampling_nearest")(lambda X: {"Y": F.interpolate(X, scale_factor=2, mode="nearest")})

# ---------------------------------------------------------------- data movement
ref("transpose")(lambda X: {"Y": X.permute(2, 0, 1)})
ref("reshape")(lambda X: {"Y": X.reshape(2, 3, 4)})
ref("flatten")(lambda X: {"Y": X.reshape(X.shape[0], -1)})
ref("expand_dims")(lambda X: {"Y": X.unsqueeze(1)})
ref("squeeze")(lambda X: {"Y": X.squeeze(1)})
ref("broadcast_to")(lambda X: {"Y": X.expand(2, 3, 4)})
ref("concatenate")(lambda A, B: {"C": torch.cat([A, B], dim=1)})
ref("split")(lambda X: {"A": X[:, :2], "B": X[:, 2:]})
# begin (1, 8), end (7, 0), strides (2, -2); torch has no negative steps.
ref("strided_slice")(lambda X: {"Y": X[1:7:2][:, torch.tensor([8, 6, 4, 2])]})
ref("pad")(lambda X: {"Y": F.pad(X, (2, 2, 1, 1), value=0.5)})
ref("take")(lambda W, I: {"Y": W[I]})
ref("slice_like")(lambda X, S: {"Y": X[: S.shape[0], : S.shape[1]]})

# ---------------------------------------------------------------- stress
ref("mirror_mul")(lambda X: {"Y": X * torch.flip(X, dims=[0])})
ref("diagonal")(lambda X: {"Y": torch.diagonal(X) * 2.0})


@ref("inplace_update")
def _inplace_update(X, W):
    y = torch.exp(X)
    return {"Y": y * W + y * y}


@ref("product_chain")
def _product_chain(X):
    # examples/ops/product_chain.tir is bench/zoo_chain.py with N = 8: X multiplied N+1 times.
    y = X * X
    for _ in range(7):
        y = y * X
    return {"Y": y}


# ---------------------------------------------------------------- session 4 (autodiff r3)
ref("silu")(lambda X: {"T_silu": F.silu(X)})
ref("mish")(lambda X: {"Y": F.mish(X)})
ref("elu")(lambda X: {"Y": F.elu(X, alpha=1.3)})
ref("selu")(lambda X: {"Y": torch.selu(X)})
ref("hardswish")(lambda X: {"Y": F.hardswish(X)})
ref("hardsigmoid")(lambda X: {"Y": F.hardsigmoid(X)})
ref("log_sigmoid")(lambda X: {"Y": F.logsigmoid(X)})
ref("softsign")(lambda X: {"Y": F.softsign(X)})
ref("smooth_l1_loss")(lambda P, T: {"L": F.smooth_l1_loss(P, T, beta=0.5).reshape(1)})
ref("huber_loss")(lambda P, T: {"L": F.huber_loss(P, T, reduction="sum", delta=1.0).reshape(1)})
ref("kl_div")(lambda P, T: {"L": F.kl_div(P, T, reduction="batchmean").reshape(1)})
ref("cosine_similarity")(lambda A, B: {"Y": F.cosine_similarity(A, B, dim=1, eps=1e-8)})


@ref("rms_norm")
def _rms_norm(n, X, G):
    return {"Y": X * torch.rsqrt(X.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * G}


ref("instance_norm")(lambda X: {"Y": F.instance_norm(X, eps=1e-5)})
ref("group_norm")(lambda X, Gamma, Beta: {"Y": F.group_norm(X, 2, Gamma, Beta, eps=1e-5)})
ref("conv2d_group")(lambda X, W: {"Y": F.conv2d(X, W, groups=2)})
# NHWC input, HWIO weight.
ref("conv2d_nhwc")(lambda X, W: {
    "Y": F.conv2d(X.permute(0, 3, 1, 2), W.permute(3, 2, 0, 1), padding=1).permute(0, 2, 3, 1)})
ref("conv3d")(lambda X, W: {"Y": F.conv3d(X, W)})
ref("max_pool2d_pad")(lambda X: {"Y": F.max_pool2d(X, 3, 2, padding=1)})
ref("avg_pool2d_nopad")(lambda X: {"Y": F.avg_pool2d(X, 3, 1, padding=1, count_include_pad=False)})
ref("adaptive_avg_pool")(lambda X: {"Y": F.adaptive_avg_pool2d(X, (3, 3))})
ref("upsampling_bilinear")(lambda X: {
    "Y": F.interpolate(X, scale_factor=2, mode="bilinear", align_corners=False)})
ref("pixel_shuffle")(lambda X: {"Y": F.pixel_shuffle(X, 2)})


@ref("im2col")
def _im2col(X):
    # F.unfold wants a batch: [1, C, H, W] -> [1, C*3*3, H*W].
    return {"Y": F.unfold(X.unsqueeze(0), 3, padding=1)[0]}


ref("flip")(lambda X: {"Y": torch.flip(X, dims=[1])})
ref("roll")(lambda n, X: {"Y": torch.roll(X, 3, dims=1)})
ref("tril")(lambda X: {"Y": torch.tril(X)})
ref("gather")(lambda X, I: {"Y": torch.gather(X, 1, I)})
ref("one_hot_matmul")(lambda E, I: {"Y": F.one_hot(I, E.shape[0]).to(E.dtype) @ E})
ref("outer")(lambda A, B: {"C": torch.outer(A, B)})
ref("einsum_bmm_t")(lambda A, Bt: {"C": torch.einsum("bij,bjk->bik", A, Bt.transpose(1, 2))})
ref("trace")(lambda X: {"Y": torch.trace(X).reshape(1)})
ref("rev_cumsum")(lambda X: {"Y": torch.flip(torch.cumsum(torch.flip(X, dims=[1]), dim=1), dims=[1])})
ref("softmax_temp")(lambda T, X: {"Y": torch.softmax(X / T, dim=1)})
ref("dense_bias_relu")(lambda X, W, B: {"Y": torch.relu(F.linear(X, W, B))})
ref("embedding_bag")(lambda W, I: {"Y": F.embedding_bag(I, W, mode="sum")})

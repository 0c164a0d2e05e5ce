"""Paper B's training (``softmax_not_enough.train``) against the paper's listing run in JAX.

The reference is App. A's Flax listing written in plain JAX (no Flax needed; the same layers):
item encoder GELU(Dense(GELU(Dense(x)))), query encoder Dense(GELU(Dense(q))), q/k/v with
biases, scores q·k_i/√128, softmax, output projection, Dense_C(GELU(Dense(o))), tanh GELU,
LeCun-normal weights; S seeds batched with ``jax.vmap``, one jitted step per set size, Adam
with the L2 term (``optax.add_decayed_weights`` before ``optax.adam``, as torch's
``Adam(weight_decay=λ)``), cosine decay, ``batch`` sets of one size per step drawn inside the
step. Its compile time (every size, cold) is reported apart from its time per step.
"""

from __future__ import annotations

import time
from typing import Any

from _floors_common import row

WORKLOAD = "paper B training"


def _project_step_s(seeds: int, steps: int, max_size: int) -> float:
    """Seconds per step of the project's ``train()`` (10 seeds batched, the default model)."""
    from attnlimits.experiments.softmax_not_enough.config import ModelConfig, TrainConfig
    from attnlimits.experiments.softmax_not_enough.train import train

    cfg = TrainConfig(steps=steps, max_size=max_size, ckpt_every=10**9)
    train(ModelConfig(), TrainConfig(steps=3, max_size=max_size), list(range(seeds)))  # warm-up
    t = time.perf_counter()
    train(ModelConfig(), cfg, list(range(seeds)))
    return (time.perf_counter() - t) / steps


def _jax_listing(seeds: int, steps: int, max_size: int, batch: int = 128) -> tuple[float, float]:
    """(compile seconds for every size, seconds per step) of the listing in JAX."""
    import jax
    import jax.numpy as jnp
    import optax

    W, C, DQ = 128, 10, 11
    shapes = {"item1": (1 + C, W), "item2": (W, W), "query1": (DQ, W), "query2": (W, W),
              "w_q": (W, W), "w_k": (W, W), "w_v": (W, W), "w_o": (W, W),
              "out1": (W, W), "out2": (W, C)}  # fmt: skip
    lecun = jax.nn.initializers.lecun_normal()

    def init(key: Any) -> dict[str, Any]:
        keys = jax.random.split(key, len(shapes))
        pairs = zip(keys, shapes.items(), strict=True)
        return {n: {"w": lecun(k, s), "b": jnp.zeros(s[1])} for k, (n, s) in pairs}

    def dense(p: dict[str, Any], name: str, x: Any) -> Any:
        return x @ p[name]["w"] + p[name]["b"]

    def loss_fn(p: dict[str, Any], items: Any, query: Any, target: Any) -> Any:
        g = jax.nn.gelu  # tanh approximation, Flax's default
        h = g(dense(p, "item2", g(dense(p, "item1", items))))  # (B, n, W)
        u = dense(p, "query2", g(dense(p, "query1", query)))  # (B, W)
        q, k, v = dense(p, "w_q", u), dense(p, "w_k", h), dense(p, "w_v", h)
        a = jax.nn.softmax(jnp.einsum("bw,bnw->bn", q, k) / jnp.sqrt(W), axis=-1)
        o = dense(p, "w_o", jnp.einsum("bn,bnw->bw", a, v))
        logits = dense(p, "out2", g(dense(p, "out1", o)))
        return optax.softmax_cross_entropy_with_integer_labels(logits, target).mean()

    sched = optax.cosine_decay_schedule(1e-3, steps)
    opt = optax.chain(optax.add_decayed_weights(1e-3), optax.adam(sched))

    def one_seed(p: Any, state: Any, key: Any, n: int) -> tuple[Any, Any]:
        k1, k2, k3 = jax.random.split(key, 3)
        prio = jax.random.uniform(k1, (batch, n))
        cls = jax.random.randint(k2, (batch, n), 0, C)
        query = jax.random.uniform(k3, (batch, DQ))
        items = jnp.concatenate([prio[..., None], jax.nn.one_hot(cls, C)], -1)
        target = jnp.take_along_axis(cls, prio.argmax(1)[:, None], 1)[:, 0]
        grads = jax.grad(loss_fn)(p, items, query, target)
        updates, state = opt.update(grads, state, p)
        return optax.apply_updates(p, updates), state

    params = jax.vmap(init)(jax.random.split(jax.random.PRNGKey(0), seeds))
    state = jax.vmap(opt.init)(params)
    step = jax.jit(jax.vmap(one_seed, in_axes=(0, 0, 0, None)), static_argnums=3)
    keys = jax.random.split(jax.random.PRNGKey(1), seeds)
    t = time.perf_counter()
    compiled = {n: step.lower(params, state, keys, n).compile() for n in range(1, max_size + 1)}
    compile_s = time.perf_counter() - t
    sizes = jax.random.randint(jax.random.PRNGKey(2), (steps,), 1, max_size + 1).tolist()
    t = time.perf_counter()
    for i, n in enumerate(sizes):
        keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(3), i), seeds)
        params, state = compiled[n](params, state, keys)
    jax.block_until_ready(params)
    return compile_s, (time.perf_counter() - t) / steps


def rows(quick: bool) -> list[dict[str, Any]]:
    seeds, steps, max_size = (2, 10, 1) if quick else (10, 300, 16)
    what = f"the listing in JAX, {seeds} seeds vmapped, per step"
    stage = f"{seeds} seeds, sizes 1–{max_size}, per step"
    try:
        import jax  # noqa: F401
        import optax  # noqa: F401
    except ImportError:
        ours = _project_step_s(seeds, steps, max_size)
        note = "JAX not installed (pip install jax optax): the floor is the project's own time"
        return [row(WORKLOAD, stage, ours, ours, "JAX missing", note)]
    compile_s, ref = _jax_listing(seeds, steps, max_size)
    ours = _project_step_s(seeds, steps, max_size)
    note = f"JAX compiled {max_size} size(s) in {compile_s:.1f} s (not in the floor); {steps} steps"
    return [row(WORKLOAD, stage, ours, ref, what, note)]

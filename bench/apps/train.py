"""Data-parallel training: an MLP in numpy, gradients summed with Allreduce.

    mpiexec -n 4 python bench/apps/train.py [--layers 256,1024,512,10] [--steps 30]
                                            [--batch 256] [--buckets flat|layer]

A ReLU MLP (float32; the default has 0.79 M parameters, 3 MiB) learns to
classify synthetic data labelled by a random linear "teacher". Every step
takes the next global batch of --batch samples; each rank computes the
gradient of the summed cross-entropy on its contiguous share of the batch,
the gradients (and the loss) are summed over ranks with Allreduce (one flat
buffer, or one Allreduce per layer with --buckets layer) and every rank
applies the same SGD update. The maths does not depend on the number of
ranks (up to rounding).

Verification: every rank holds bit-identical parameters after the last step
(the Allreduce must give every rank the same sum) and the loss went down
(the mean of the last three steps' losses is below --max-loss-ratio times
the mean of the first three).
"""
import hashlib
import sys
import time

import common  # first: it limits BLAS threads before numpy loads
import numpy as np

NAME = "train"


def add_arguments(parser):
    parser.add_argument("--layers", default="256,1024,512,10",
                        help="layer widths: inputs, hidden..., classes (default %(default)s)")
    parser.add_argument("--steps", type=int, default=30, help="SGD steps (default %(default)s)")
    parser.add_argument("--batch", type=int, default=256,
                        help="global batch size (default %(default)s)")
    parser.add_argument("--samples", type=int, default=8192,
                        help="size of the dataset (default %(default)s)")
    parser.add_argument("--lr", type=float, default=0.05,
                        help="learning rate (default %(default)s)")
    parser.add_argument("--buckets", choices=("flat", "layer"), default="flat",
                        help="one Allreduce of all gradients, or one per layer "
                             "(default %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the data and the model (default %(default)s)")
    parser.add_argument("--max-loss-ratio", type=float, default=0.9,
                        help="the loss must fall below this fraction of its start "
                             "(default %(default)s)")


def describe(args):
    widths = parse_layers(args.layers)
    n = parameter_count(widths)
    return "layers %s, %d parameters (%.1f MiB), %d steps of batch %d, %s buckets" % (
        args.layers, n, n * 4 / 2**20, args.steps, args.batch, args.buckets)


def parse_layers(spec):
    widths = [int(w) for w in spec.split(",")]
    if len(widths) < 2 or min(widths) < 1:
        raise SystemExit("--layers needs at least two positive widths, e.g. 256,1024,10")
    return widths


def parameter_count(widths):
    return sum(fan_in * fan_out + fan_out for fan_in, fan_out in zip(widths, widths[1:]))


class FlatParameters:
    """All weights and biases in one float32 array, with per-layer views
    ([(W, b), ...]); an extra trailing slot (`extra`) lets the loss travel in
    the same Allreduce as the gradients."""

    def __init__(self, widths, extra=0):
        self.data = np.zeros(parameter_count(widths) + extra, dtype=np.float32)
        self.layers, self.slices = [], []
        offset = 0
        for fan_in, fan_out in zip(widths, widths[1:]):
            start = offset
            weights = self.data[offset:offset + fan_in * fan_out].reshape(fan_in, fan_out)
            offset += fan_in * fan_out
            bias = self.data[offset:offset + fan_out]
            offset += fan_out
            self.layers.append((weights, bias))
            self.slices.append(slice(start, offset))
        self.extra = self.data[offset:]


def make_dataset(widths, samples, seed):
    """Inputs ~ N(0, 1) and labels = argmax of a random linear teacher."""
    rng = np.random.default_rng(seed)
    inputs = rng.standard_normal((samples, widths[0]), dtype=np.float32)
    teacher = rng.standard_normal((widths[0], widths[-1]), dtype=np.float32)
    return inputs, np.argmax(inputs @ teacher, axis=1)


def init_parameters(widths, seed):
    params = FlatParameters(widths)
    rng = np.random.default_rng(seed + 1)
    for weights, _ in params.layers:         # He initialisation, zero biases
        fan_in = weights.shape[0]
        weights[:] = rng.standard_normal(weights.shape, dtype=np.float32) * np.sqrt(2.0 / fan_in)
    return params


def loss_and_gradients(params, inputs, labels, grads):
    """Summed cross-entropy of the batch and its gradient, written into the
    views of `grads` (a FlatParameters of the same shape)."""
    activations, pre_activations = [inputs], []
    for index, (weights, bias) in enumerate(params.layers):
        z = activations[-1] @ weights + bias
        pre_activations.append(z)
        activations.append(np.maximum(z, 0) if index < len(params.layers) - 1 else z)
    logits = activations[-1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sum_exp = exp.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = float(np.sum(np.log(sum_exp[:, 0]) - shifted[rows, labels]))
    delta = exp / sum_exp                  # d loss / d logits
    delta[rows, labels] -= 1.0
    for index in range(len(params.layers) - 1, -1, -1):
        grad_weights, grad_bias = grads.layers[index]
        np.matmul(activations[index].T, delta, out=grad_weights)
        delta.sum(axis=0, out=grad_bias)
        if index > 0:
            delta = (delta @ params.layers[index][0].T) * (pre_activations[index - 1] > 0)
    return loss


def setup(args, world):
    widths = parse_layers(args.layers)
    inputs, labels = make_dataset(widths, args.samples, args.seed)
    lo, hi = common.block_range(args.batch, world.Get_size(), world.Get_rank())
    return {"args": args, "widths": widths, "inputs": inputs, "labels": labels,
            "share": (lo, hi)}


def run(problem, comm):
    args, widths = problem["args"], problem["widths"]
    params = init_parameters(widths, args.seed)
    grads = FlatParameters(widths, extra=1)         # local gradient sum + local loss sum
    total = FlatParameters(widths, extra=1)         # the same, summed over ranks
    buckets = [slice(0, len(grads.data))] if args.buckets == "flat" else \
        [*grads.slices, slice(grads.slices[-1].stop, len(grads.data))]
    lo, hi = problem["share"]
    n_params = parameter_count(widths)
    step_size = np.float32(args.lr / args.batch)
    losses, step_seconds = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        batch = np.arange(step * args.batch + lo, step * args.batch + hi) % args.samples
        grads.extra[0] = loss_and_gradients(params, problem["inputs"][batch],
                                            problem["labels"][batch], grads)
        for bucket in buckets:
            comm.Allreduce(grads.data[bucket], total.data[bucket])
        params.data -= step_size * total.data[:n_params]
        losses.append(float(total.extra[0]) / args.batch)
        step_seconds.append(time.perf_counter() - start)
    return {"params": params.data, "losses": losses, "step_seconds": step_seconds}


def verify(problem, answer, world):
    args = problem["args"]
    digest = hashlib.sha256(answer["params"].tobytes()).hexdigest()
    identical = len(set(world.allgather(digest))) == 1
    losses = answer["losses"]
    k = min(3, len(losses))
    start, end = float(np.mean(losses[:k])), float(np.mean(losses[-k:]))
    decreased = end < args.max_loss_ratio * start
    summary = {"loss_start": "%.4f" % start, "loss_end": "%.4f" % end,
               "step_ms": "%.2f" % (1e3 * float(np.mean(answer["step_seconds"]))),
               "identical": "yes" if identical else "NO", "params": digest[:16],
               "losses": losses}
    return identical and decreased, summary


if __name__ == "__main__":
    common.main(sys.modules[__name__])

#!/usr/bin/env python3
"""The sample MLP trained data-parallel from Python through the ctp package.

Each worker builds the sample MLP (ctp.samples.mlp), transpiles it for its
rank, sets up its rings by running the startup program, and trains on its
share of every batch of a synthetic data set made with NumPy. Start one
worker per rank with a launcher that sets the usual variables:

    ctp launch --nproc 2 -- /usr/bin/python3 samples/python_trainer.py --steps 50

(PYTHONPATH=build/python in a build tree; nothing once ctp is installed).
Rank 0 prints the loss; with --save-params DIR every worker writes
DIR/rank<r>/<param>.npy after training.
"""
import argparse
import os
import sys

import numpy as np

import ctp


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", default="grad_allreduce", choices=["grad_allreduce", "local_sgd"],
                   help="the transpiler (the multi-process modes)")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--global-batch", type=int, default=64, help="over all workers")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"])
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1,
                   help="initializer seed of rank 0; rank r uses seed + r, so that the "
                        "startup broadcast is what makes the workers' parameters equal")
    p.add_argument("--device", default="cpu", help="cpu, or gpu (the worker's local GPU)")
    p.add_argument("--save-params", metavar="DIR", help="write DIR/rank<r>/<param>.npy")
    return p.parse_args(argv)


def cluster_data(samples, dim, classes, seed=7):
    """Gaussian clusters, one per class: the same on every worker."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 2.0, size=(classes, dim))
    labels = rng.integers(0, classes, size=samples)
    features = centres[labels] + rng.normal(0.0, 1.0, size=(samples, dim))
    return features.astype(np.float32), labels.reshape(-1, 1).astype(np.int64)


def device_of(name, identity):
    if name == "cpu":
        return "cpu"
    gpus = identity.selected_gpus or [identity.local_rank]
    return f"gpu:{gpus[0]}"


def train(args, identity):
    rank, world = identity.rank, identity.world_size
    if args.global_batch % world:
        raise SystemExit(f"--global-batch {args.global_batch} does not split over {world} workers")
    model = ctp.samples.mlp(optimizer=args.optimizer, learning_rate=args.learning_rate)
    startup, main = model.startup, model.main
    if world > 1:
        startup, main = ctp.transpile(startup, main, mode=args.mode, rank=rank,
                                      endpoints=identity.endpoints, params="auto")
    runtime = ctp.DeviceRuntime(device_of(args.device, identity))
    comms = ctp.Communicators(runtime, timeout=identity.comm_timeout, job_id=identity.job_id)
    scope = ctp.Scope()
    ctp.Executor(startup, runtime, comms, seed=args.seed + rank).run(scope)
    step = ctp.Executor(main, runtime, comms)
    features, labels = cluster_data(4096, 2, 3)
    share = args.global_batch // world
    order = np.random.default_rng(args.seed)
    for i in range(1, args.steps + 1):
        batch = order.choice(len(features), size=args.global_batch, replace=False)
        mine = batch[rank * share:(rank + 1) * share]
        (loss,) = step.run(scope, feed={model.input: features[mine], model.label: labels[mine]},
                           fetch=[model.loss])
        if not np.isfinite(loss).all():
            raise SystemExit(f"step {i}: the loss is {loss}")
        if rank == 0 and (i == 1 or i % 10 == 0 or i == args.steps):
            print(f"step {i}/{args.steps} loss {float(loss.reshape(-1)[0]):.4f}", flush=True)
    if args.save_params:
        out = os.path.join(args.save_params, f"rank{rank}")
        os.makedirs(out, exist_ok=True)
        for name in model.parameters:
            np.save(os.path.join(out, name + ".npy"), runtime.fetch(scope, name, comms))


def main(argv):
    args = parse_args(argv)
    identity = ctp.worker_identity(dict(os.environ))
    try:
        train(args, identity)
    except ctp.Error as e:
        print(f"python_trainer: rank {identity.rank}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
